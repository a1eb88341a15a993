// MLX affine quantization: the packed layout, MLX's quantizer (edge exactness, error bound), the
// activation quantization, the quantized matmul against float64 within the bound the activations'
// int8 rounding allows, and batch/thread invariance of the pool dispatch.
#include "kernels/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "quant_util.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::OwnedQuant;
using testing::quantize;
using testing::random_floats;

TEST(Quant, CodesArePackedLittleEndianInWords) {
  const std::uint32_t four[2] = {0x76543210u, 0xFEDCBA98u};
  for (int j = 0; j < 16; ++j) EXPECT_EQ(quant_code(four, 4, j), static_cast<std::uint32_t>(j));
  const std::uint32_t eight[1] = {0x04030201u};
  for (int j = 0; j < 4; ++j) EXPECT_EQ(quant_code(eight, 8, j), static_cast<std::uint32_t>(j + 1));
}

// MLX's quantizer: the group's edge of larger magnitude is exactly representable (it is the bias,
// code 0) and every value is within half a step of its dequantization (a step at the end codes).
TEST(Quant, QuantizerKeepsTheLargerEdgeExactAndErrorsWithinHalfAStep) {
  for (int bits : {4, 8}) {
    for (int gs : {32, 64, 128}) {
      const std::int64_t rows = 5, cols = 256;
      auto w = random_floats(static_cast<std::size_t>(rows * cols), 7, -0.3f, 0.2f);
      w[3] = 0.9f;     // a positive edge dominates group 0 of row 0
      w[300] = -2.0f;  // a negative edge dominates a group of row 1
      const OwnedQuant q = quantize(w, rows, cols, bits, gs, DType::kF32);
      std::vector<float> deq(static_cast<std::size_t>(cols));
      for (std::int64_t r = 0; r < rows; ++r) {
        dequantize_row(q.mlx, r, deq.data());
        for (std::int64_t g = 0; g < cols / gs; ++g) {
          const float s = static_cast<const float*>(q.mlx.scales)[r * (cols / gs) + g];
          float lo = 1e9f, hi = -1e9f;
          for (std::int64_t i = g * gs; i < (g + 1) * gs; ++i) {
            const float x = w[static_cast<std::size_t>(r * cols + i)];
            lo = std::min(lo, x);
            hi = std::max(hi, x);
            // Nudging the scale to make the edge exact can push the far edge past the last code:
            // values clamped to an end code are within a whole step, the others within half.
            const std::uint32_t code = quant_code(q.codes.data() + r * cols * bits / 32, bits, i);
            const bool end_code = code == 0 || code == (1u << bits) - 1;
            EXPECT_LE(std::fabs(deq[static_cast<std::size_t>(i)] - x),
                      std::fabs(s) * (end_code ? 1.0f : 0.5f) + 1e-6f)
                << bits << "/" << gs << " row " << r << " col " << i;
          }
          const float edge = std::fabs(lo) > std::fabs(hi) ? lo : hi;
          bool found = false;
          for (std::int64_t i = g * gs; i < (g + 1) * gs; ++i) {
            if (w[static_cast<std::size_t>(r * cols + i)] == edge) {
              EXPECT_EQ(deq[static_cast<std::size_t>(i)], edge);
              found = true;
            }
          }
          EXPECT_TRUE(found);
        }
      }
    }
  }
}

// The packed layout byte by byte (quant.h): in group record g of block b, 64-byte vector k holds
// lane l = row l of the block; 8 bits: byte 4l + j is element 4k + j; 4 bits: byte 4l + j holds
// element 8k + j in its low nibble and 8k + 4 + j in its high nibble; then 16 scales, 16 biases.
TEST(Quant, PackedLayoutPutsEachRowInItsLane) {
  for (int bits : {4, 8}) {
    const std::int64_t rows = 20, cols = 64, gs = 32;  // two blocks, the second with 4 real rows
    const std::uint32_t top = (1u << bits) - 1;
    auto code = [&](std::int64_t r, std::int64_t e) {
      return static_cast<std::uint32_t>((r * 7 + e * 3) % (top + 1));
    };
    std::vector<std::uint32_t> words(static_cast<std::size_t>(rows * cols * bits / 32), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t e = 0; e < cols; ++e) {
        const std::int64_t bit = (r * cols + e) * bits;
        words[static_cast<std::size_t>(bit / 32)] |= code(r, e) << (bit % 32);
      }
    }
    std::vector<float> scales(static_cast<std::size_t>(rows * 2)), biases(scales.size());
    for (std::size_t i = 0; i < scales.size(); ++i) {
      scales[i] = 1.0f + static_cast<float>(i);
      biases[i] = -static_cast<float>(i);
    }
    const MlxQuantized m{.codes = words.data(),
                         .scales = scales.data(),
                         .biases = biases.data(),
                         .dtype = DType::kF32,
                         .rows = rows,
                         .cols = cols,
                         .bits = bits,
                         .group_size = gs};
    WeightView w = packed_view(m, nullptr);
    const std::int64_t code_bytes = 16 * gs * bits / 8, record = code_bytes + 2 * 16 * 4;
    ASSERT_EQ(w.group_record_bytes(), record);
    ASSERT_EQ(w.total_bytes(), 2 * 2 * record);
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(w.total_bytes()), 0xAB);
    w.data = buf.data();
    pack_quantized_rows(m, 0, rows, w);
    for (std::int64_t r = 0; r < 32; ++r) {
      const std::int64_t b = r / 16, l = r % 16;
      for (std::int64_t g = 0; g < 2; ++g) {
        const std::uint8_t* rec = buf.data() + (b * 2 + g) * record;
        for (std::int64_t i = 0; i < gs; ++i) {
          const std::int64_t e = g * gs + i;
          const std::uint32_t want = r < rows ? code(r, e) : 0;
          std::uint32_t got;
          if (bits == 8) {
            got = rec[(i / 4) * 64 + 4 * l + i % 4];
          } else {
            const std::uint8_t byte = rec[(i / 8) * 64 + 4 * l + (i % 8) % 4];
            got = i % 8 < 4 ? byte & 15u : byte >> 4;
          }
          ASSERT_EQ(got, want) << bits << " row " << r << " e " << e;
          if (r < rows) {
            ASSERT_EQ(packed_code(w, r, e), want);
          }
        }
        float s, bias;
        std::memcpy(&s, rec + code_bytes + 4 * l, 4);
        std::memcpy(&bias, rec + code_bytes + 64 + 4 * l, 4);
        EXPECT_EQ(s, r < rows ? scales[static_cast<std::size_t>(r * 2 + g)] : 0.0f);
        EXPECT_EQ(bias, r < rows ? biases[static_cast<std::size_t>(r * 2 + g)] : 0.0f);
      }
    }
  }
}

// Packing changes where values live, never which: every row dequantizes to the same floats, and
// packing in passes (as loading does) writes the same bytes as packing at once.
TEST(Quant, PackedRowsDequantizeAsTheMlxRows) {
  for (int bits : {4, 8}) {
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
      const std::int64_t rows = 53, cols = 256;
      const OwnedQuant q = quantize(random_floats(static_cast<std::size_t>(rows * cols), 3), rows,
                                    cols, bits, 64, dtype);
      std::vector<float> a(static_cast<std::size_t>(cols)), b(a.size());
      for (std::int64_t r = 0; r < rows; ++r) {
        dequantize_row(q.mlx, r, a.data());
        dequantize_row(q.view, r, b.data());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << r;
      }
      std::vector<std::uint8_t> passes(q.packed.size(), 0xCD);
      WeightView w = q.view;
      w.data = passes.data();
      const std::int64_t words = cols * bits / 32, sb = (cols / 64) * dtype_bytes(dtype);
      for (std::int64_t r0 = 0; r0 < rows; r0 += 32) {
        MlxQuantized part = q.mlx;
        part.codes += r0 * words;
        part.scales = q.scales.data() + r0 * sb;
        part.biases = q.biases.data() + r0 * sb;
        pack_quantized_rows(part, r0, std::min<std::int64_t>(32, rows - r0), w);
      }
      EXPECT_EQ(passes, q.packed);
    }
  }
}

TEST(Quant, AZeroGroupQuantizesToZero) {
  std::vector<float> w(64, 0.0f);
  const OwnedQuant q = quantize(w, 1, 64, 4, 64, DType::kBF16);
  std::vector<float> deq(64, 1.0f);
  dequantize_row(q.view, 0, deq.data());
  for (float x : deq) EXPECT_EQ(x, 0.0f);
  dequantize_row(q.mlx, 0, deq.data());
  for (float x : deq) EXPECT_EQ(x, 0.0f);
}

TEST(Quant, ActivationRowsRoundToInt8PerGroup) {
  const float x[4] = {1.0f, -0.5f, 0.25f, 0.0f};
  std::int8_t q[64] = {};
  float d[2], xsum[2];
  std::vector<float> row(64, 0.0f);
  std::copy(x, x + 4, row.begin());
  quantize_activation_row(row.data(), 64, 32, {.q = q, .d = d, .xsum = xsum});
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], -64);  // -63.5 rounds to even
  EXPECT_EQ(q[2], 32);   // 31.75
  EXPECT_EQ(q[3], 0);
  EXPECT_FLOAT_EQ(d[0], 1.0f / 127.0f);
  EXPECT_FLOAT_EQ(xsum[0], d[0] * (127 - 64 + 32));
  EXPECT_EQ(d[1], 0.0f);  // an all-zero group
  EXPECT_EQ(xsum[1], 0.0f);
}

// y = x̂·ŵ exactly up to f32 rounding, where x̂ is the int8-rounded activation: against the float64
// product of x and the dequantized weights, the difference is bounded by Σ_g d_g/2 · Σ_{i∈g}|ŵ_i|
// (half an activation step per input) plus f32 accumulation.
TEST(Quant, MatmulIsWithinTheActivationRoundingOfFloat64) {
  for (int bits : {4, 8}) {
    for (int gs : {32, 64, 128}) {
      const std::int64_t rows = 37, cols = 384, n_x = 3;
      const auto w = random_floats(static_cast<std::size_t>(rows * cols), 11);
      const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 12, -3, 3);
      const OwnedQuant q = quantize(w, rows, cols, bits, gs, DType::kBF16);
      std::vector<std::int8_t> xq(static_cast<std::size_t>(n_x * cols));
      std::vector<float> d(static_cast<std::size_t>(n_x * cols / gs)), xs(d.size());
      for (std::int64_t r = 0; r < n_x; ++r) {
        quantize_activation_row(x.data() + r * cols, cols, gs,
                                {.q = xq.data() + r * cols,
                                 .d = d.data() + r * (cols / gs),
                                 .xsum = xs.data() + r * (cols / gs)});
      }
      std::vector<float> y(static_cast<std::size_t>(n_x * rows));
      ref::matmul_quant({.q = xq.data(), .d = d.data(), .xsum = xs.data()}, n_x, q.view, y.data(),
                        rows);
      std::vector<float> deq(static_cast<std::size_t>(cols));
      double worst = 0;
      for (std::int64_t n = 0; n < rows; ++n) {
        dequantize_row(q.view, n, deq.data());
        for (std::int64_t r = 0; r < n_x; ++r) {
          double exact = 0, bound = 0, mag = 0;
          for (std::int64_t i = 0; i < cols; ++i) {
            const double wi = deq[static_cast<std::size_t>(i)];
            exact += wi * x[static_cast<std::size_t>(r * cols + i)];
            bound += std::fabs(wi) * d[static_cast<std::size_t>(r * (cols / gs) + i / gs)] * 0.5;
            mag += std::fabs(wi * x[static_cast<std::size_t>(r * cols + i)]);
          }
          const double err = std::fabs(y[static_cast<std::size_t>(r * rows + n)] - exact);
          EXPECT_LE(err, bound + 1e-6 * mag) << bits << "/" << gs << " n " << n << " r " << r;
          worst = std::max(worst, err / (bound + 1e-30));
        }
      }
      EXPECT_LT(worst, 1.0);
    }
  }
}

// The pool dispatch: every row's bytes equal the row computed alone, on 1 or 3 threads, with two
// quantized weights of different group sizes and a bf16 one in one fused call, and batches on
// both sides of the streaming (decode) split.
TEST(Quant, FusedDispatchIsBatchAndThreadInvariant) {
  const std::int64_t cols = 256, n_x = 21;
  const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 21, -2, 2);
  const OwnedQuant a = quantize(random_floats(static_cast<std::size_t>(130 * cols), 22), 130, cols,
                                4, 64, DType::kBF16);
  const OwnedQuant b = quantize(random_floats(static_cast<std::size_t>(70 * cols), 23), 70, cols, 8,
                                32, DType::kF16);
  std::vector<std::uint16_t> plain(static_cast<std::size_t>(48 * cols));
  const auto pf = random_floats(plain.size(), 24);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = f32_to_bf16(pf[i]);
  const WeightView c{.data = plain.data(), .dtype = DType::kBF16, .rows = 48, .cols = cols};
  const std::int64_t widths[3] = {130, 70, 48};
  ThreadPool one(1), three(3);
  auto run = [&](ThreadPool& pool, const float* xs, std::int64_t n) {
    std::vector<float> y(static_cast<std::size_t>(n * (130 + 70 + 48)));
    const MatmulOut outs[3] = {{.w = a.view, .y = y.data()},
                               {.w = b.view, .y = y.data() + n * 130},
                               {.w = c, .y = y.data() + n * 200}};
    matmul_fused(pool, xs, n, outs);
    return y;
  };
  for (std::int64_t batch : {std::int64_t{5}, n_x}) {
    const std::vector<float> all = run(three, x.data(), batch);
    for (std::int64_t r = 0; r < batch; ++r) {
      const std::vector<float> alone = run(one, x.data() + r * cols, 1);
      std::int64_t at_alone = 0, at_all = 0;
      for (std::int64_t width : widths) {
        ASSERT_EQ(std::memcmp(alone.data() + at_alone, all.data() + at_all + r * width,
                              static_cast<std::size_t>(width) * sizeof(float)),
                  0)
            << "batch " << batch << " row " << r << " width " << width;
        at_alone += width;
        at_all += batch * width;
      }
    }
  }
}

// Every ISA's quantized matmul has the reference's bytes: the group dot products are exact
// integers whatever their order, and each output's f32 operations are the reference's. Odd group
// counts, weight rows ending inside a block, more than one streaming chunk, activation rows
// around the kernels' tiles, both widths, every group size and every scale dtype.
TEST(Quant, EveryIsaEqualsTheReferenceBitForBit) {
  ThreadPool pool(2);
  struct Case {
    int bits, gs;
    std::int64_t cols, rows;
    DType dtype;
  };
  std::vector<Case> cases;
  for (int bits : {4, 8}) {
    for (int gs : {32, 64, 128}) {
      for (std::int64_t cols : {gs * 3, gs * 8})
        cases.push_back({bits, gs, cols, 70, DType::kBF16});
    }
    cases.push_back({bits, 64, 128, 300, DType::kF16});
    cases.push_back(
        {bits, 64, 128, 50, DType::kBF16});  // a two-block tile's second block part empty
    cases.push_back({bits, 32, 96, 37, DType::kF32});
  }
  for (const auto& [bits, gs, cols, rows, dtype] : cases) {
    {
      {
        const OwnedQuant q = quantize(random_floats(static_cast<std::size_t>(rows * cols), 31),
                                      rows, cols, bits, gs, dtype);
        for (std::int64_t n_x : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 33, 70}) {
          const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 32, -2, 2);
          std::vector<float> want(static_cast<std::size_t>(n_x * rows));
          {
            testing::ScopedIsa scalar(Isa::kScalar);
            const MatmulOut out{.w = q.view, .y = want.data()};
            matmul_fused(pool, x.data(), n_x, {&out, 1});
          }
          for (Isa isa : testing::runnable_isas()) {
            testing::ScopedIsa scoped(isa);
            std::vector<float> got(want.size());
            const MatmulOut out{.w = q.view, .y = got.data()};
            matmul_fused(pool, x.data(), n_x, {&out, 1});
            ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
                << isa_name(isa) << " bits " << bits << " group " << gs << " cols " << cols
                << " rows " << n_x;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels
