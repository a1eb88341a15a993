// MLX affine quantization: the packed layout, MLX's quantizer (edge exactness, error bound), the
// activation quantization, the quantized matmul against float64 within the bound the activations'
// int8 rounding allows, and batch/thread invariance of the pool dispatch.
#include "kernels/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::random_floats;

struct OwnedQuant {
  std::vector<std::uint32_t> codes;
  std::vector<std::uint8_t> scales, biases;
  WeightView view;
};

OwnedQuant quantize(const std::vector<float>& w, std::int64_t rows, std::int64_t cols, int bits,
                    int gs, DType dtype) {
  OwnedQuant q;
  q.codes.resize(static_cast<std::size_t>(rows * cols * bits / 32));
  const auto sb = static_cast<std::size_t>(rows * (cols / gs) * dtype_bytes(dtype));
  q.scales.resize(sb);
  q.biases.resize(sb);
  quantize_rows(w.data(), rows, cols, bits, gs, dtype, q.codes.data(), q.scales.data(),
                q.biases.data());
  q.view = {.data = q.codes.data(),
            .dtype = dtype,
            .rows = rows,
            .cols = cols,
            .bits = bits,
            .group_size = gs,
            .scales = q.scales.data(),
            .biases = q.biases.data()};
  return q;
}

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
        dequantize_row(q.view, r, deq.data());
        for (std::int64_t g = 0; g < cols / gs; ++g) {
          const float s = static_cast<const float*>(q.view.scales)[r * (cols / gs) + g];
          float lo = 1e9f, hi = -1e9f;
          for (std::int64_t i = g * gs; i < (g + 1) * gs; ++i) {
            const float x = w[static_cast<std::size_t>(r * cols + i)];
            lo = std::min(lo, x);
            hi = std::max(hi, x);
            // Nudging the scale to make the edge exact can push the far edge past the last code:
            // values clamped to an end code are within a whole step, the others within half.
            const std::uint32_t code = quant_code(
                static_cast<const std::uint32_t*>(q.view.slice_rows(r, 1).data), bits, i);
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

TEST(Quant, AZeroGroupQuantizesToZero) {
  std::vector<float> w(64, 0.0f);
  const OwnedQuant q = quantize(w, 1, 64, 4, 64, DType::kBF16);
  std::vector<float> deq(64, 1.0f);
  dequantize_row(q.view, 0, deq.data());
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

// The pool dispatch: every row's bytes equal the row computed alone, on 1 or 3 threads, also with
// two weights of different group sizes in one fused call.
TEST(Quant, FusedDispatchIsBatchAndThreadInvariant) {
  const std::int64_t cols = 256, n_x = 9;
  const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 21, -2, 2);
  const OwnedQuant a = quantize(random_floats(static_cast<std::size_t>(130 * cols), 22), 130, cols,
                                4, 64, DType::kBF16);
  const OwnedQuant b = quantize(random_floats(static_cast<std::size_t>(70 * cols), 23), 70, cols, 8,
                                32, DType::kF16);
  ThreadPool one(1), three(3);
  auto run = [&](ThreadPool& pool, const float* xs, std::int64_t n) {
    std::vector<float> ya(static_cast<std::size_t>(n * 130)), yb(static_cast<std::size_t>(n * 70));
    const MatmulOut outs[2] = {{.w = a.view, .y = ya.data()}, {.w = b.view, .y = yb.data()}};
    matmul_quantized(pool, xs, n, outs);
    ya.insert(ya.end(), yb.begin(), yb.end());
    return ya;
  };
  const std::vector<float> all = run(three, x.data(), n_x);
  for (std::int64_t r = 0; r < n_x; ++r) {
    const std::vector<float> alone = run(one, x.data() + r * cols, 1);
    ASSERT_EQ(std::memcmp(alone.data(), all.data() + r * 130, 130 * sizeof(float)), 0) << r;
    ASSERT_EQ(std::memcmp(alone.data() + 130, all.data() + n_x * 130 + r * 70, 70 * sizeof(float)),
              0)
        << r;
  }
}

// Every ISA's quantized matmul has the reference's bytes: the group dot products are exact
// integers whatever their order, and the f32 epilogue is the reference's. Odd group counts,
// row counts around the kernels' blocks, both widths and every group size.
TEST(Quant, EveryIsaEqualsTheReferenceBitForBit) {
  ThreadPool pool(2);
  for (int bits : {4, 8}) {
    for (int gs : {32, 64, 128}) {
      for (std::int64_t cols : {gs * 3, gs * 8}) {
        const std::int64_t rows = 70;
        const OwnedQuant q = quantize(random_floats(static_cast<std::size_t>(rows * cols), 31),
                                      rows, cols, bits, gs, DType::kBF16);
        for (std::int64_t n_x : {1, 4, 9, 17}) {
          const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 32, -2, 2);
          std::vector<float> want(static_cast<std::size_t>(n_x * rows));
          {
            testing::ScopedIsa scalar(Isa::kScalar);
            const MatmulOut out{.w = q.view, .y = want.data()};
            matmul_quantized(pool, x.data(), n_x, {&out, 1});
          }
          for (Isa isa : testing::runnable_isas()) {
            testing::ScopedIsa scoped(isa);
            std::vector<float> got(want.size());
            const MatmulOut out{.w = q.view, .y = got.data()};
            matmul_quantized(pool, x.data(), n_x, {&out, 1});
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
