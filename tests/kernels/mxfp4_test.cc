// MXFP4 (OCP microscaling, gpt-oss's expert weights) as a packed 4-bit view with e2m1 codes:
// the value of every code and scale, packing against the spec (exact dequantization, the affine
// 4-bit layout's byte arrangement, NaN scales refused), the quantized matmul against float64 and
// on every ISA against the reference byte for byte, batch / thread / grouped invariance, and the
// same bytes as an affine 8-bit matrix holding the same weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/matmul_grouped.h"
#include "kernels/quant.h"
#include "quant_util.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::make_mxfp4;
using testing::OwnedMxfp4;
using testing::random_floats;

// The OCP MX v1.0 e2m1 table (section 5.3.3), written out independently of quant.h's.
constexpr double kSpecE2m1[16] = {0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
                                  -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

// e2m1[c]·2^(e − 127) rounded once to f32 (exact where finite; the largest overflow to inf).
float spec_value(int code, int scale) {
  return static_cast<float>(std::ldexp(kSpecE2m1[code], scale - 127));
}

// Element i of row r of a released matrix, read as transformers' convert_moe_packed_tensors
// does: byte j of a block holds element 2j in its low nibble and 2j + 1 in its high one.
int released_code(const OwnedMxfp4& q, std::int64_t r, std::int64_t i) {
  const std::uint8_t byte = q.blocks[static_cast<std::size_t>(r * q.m.cols / 2 + i / 2)];
  return i % 2 == 0 ? byte & 15 : byte >> 4;
}
int released_scale(const OwnedMxfp4& q, std::int64_t r, std::int64_t i) {
  return q.scales[static_cast<std::size_t>(r * q.m.cols / 32 + i / 32)];
}

// Floats equal as values, with −0 allowed for +0 (the affine form has no signed zero).
bool same_value(float got, float want) {
  return (std::isnan(got) && std::isnan(want)) || got == want;
}

const std::vector<std::uint8_t> kEdgeScales = {0,   1,   2,   3,   125, 126, 127,
                                               128, 129, 251, 252, 253, 254};

TEST(Mxfp4, ValueOfEveryCodeAndEdgeScale) {
  for (int e : kEdgeScales) {
    for (int c = 0; c < 16; ++c) {
      const float got = mxfp4_value(static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(e));
      const float want = spec_value(c, e);
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "code " << c << " scale " << e;  // −0 too
    }
  }
  EXPECT_EQ(mxfp4_value(1, 0), std::ldexp(1.0f, -128));      // subnormal
  EXPECT_EQ(mxfp4_value(3, 0), 3 * std::ldexp(1.0f, -128));  // 1.5·2^−127
  EXPECT_EQ(mxfp4_value(7, 127), 6.0f);
  EXPECT_EQ(mxfp4_value(15, 129), -24.0f);
  EXPECT_EQ(mxfp4_value(3, 254), 1.5f * std::ldexp(1.0f, 127));
  EXPECT_EQ(mxfp4_value(7, 254), std::numeric_limits<float>::infinity());  // 6·2^127 overflows
  for (int c = 0; c < 16; ++c)
    EXPECT_TRUE(std::isnan(mxfp4_value(static_cast<std::uint8_t>(c), 255)));
}

// The remap the kernels run is the spec: s·q + b = e2m1·2^(e − 127) with q = 2·e2m1 + 12,
// s = 2^(e − 128), b = −12·s.
TEST(Mxfp4, AffineCodesAreTheE2m1ValuesOffset) {
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(kMxfp4AffineCodes[c], 2 * kSpecE2m1[c] + 12) << c;
    EXPECT_EQ(kE2m1Values[c], kSpecE2m1[c]) << c;
    EXPECT_EQ(std::signbit(kE2m1Values[c]), std::signbit(kSpecE2m1[c])) << c;
  }
}

// Every element of packed rows dequantizes to e2m1·2^(e − 127) exactly, its code, scale and bias
// are the remap's; shapes with rows inside a block and K from one group to 4096, edge scales.
TEST(Mxfp4, PackedRowsDequantizeExactly) {
  std::uint32_t seed = 1;
  for (std::int64_t rows : {1, 15, 16, 17, 37}) {
    for (std::int64_t cols : {32, 64, 96, 2880, 4096}) {
      const OwnedMxfp4 q = make_mxfp4(rows, cols, ++seed, 100, 150, kEdgeScales, 3);
      ASSERT_EQ(q.view.total_bytes(), (rows + 15) / 16 * (cols / 32) * (16 * 16 + 2 * 16 * 2));
      std::vector<float> row(static_cast<std::size_t>(cols));
      for (std::int64_t r = 0; r < rows; ++r) {
        dequantize_row(q.view, r, row.data());
        for (std::int64_t i = 0; i < cols; ++i) {
          const int c = released_code(q, r, i), e = released_scale(q, r, i);
          ASSERT_TRUE(same_value(row[static_cast<std::size_t>(i)], spec_value(c, e)))
              << rows << "x" << cols << " row " << r << " col " << i << " code " << c << " scale "
              << e << ": " << row[static_cast<std::size_t>(i)];
          ASSERT_EQ(packed_code(q.view, r, i), kMxfp4AffineCodes[c]);
        }
        for (std::int64_t g = 0; g < cols / 32; ++g) {
          const int e = released_scale(q, r, g * 32);
          const float s = static_cast<float>(std::ldexp(1.0, e - 128));
          EXPECT_EQ(packed_scale(q.view, r, g), s) << e;
          EXPECT_EQ(packed_bias(q.view, r, g), round_to_bf16(-12.0f * s)) << e;  // −inf past 252
          if (e <= 251) {  // the affine form itself, where s·24 does not overflow
            for (int c = 0; c < 16; ++c) {
              const float affine = s * static_cast<float>(kMxfp4AffineCodes[c]) + (-12.0f * s);
              ASSERT_TRUE(same_value(affine, spec_value(c, e))) << c << " " << e;
            }
          }
        }
      }
    }
  }
}

// The nibbles sit where a 4-bit affine matrix's codes do (the same words through MLX's layout),
// padding rows are zeros, and packing in passes from pointers to just those rows writes the same
// bytes as packing at once.
TEST(Mxfp4, PacksAsTheAffineFourBitLayout) {
  const std::int64_t rows = 53, cols = 96, groups = cols / 32;
  const OwnedMxfp4 q = make_mxfp4(rows, cols, 7, 0, 254);
  // The same nibbles as MLX 4-bit words: element j of a row in nibble j % 8 of word j / 8.
  std::vector<std::uint32_t> words(static_cast<std::size_t>(rows * cols / 8), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < cols; ++i) {
      words[static_cast<std::size_t>((r * cols + i) / 8)] |=
          static_cast<std::uint32_t>(released_code(q, r, i)) << (4 * (i % 8));
    }
  }
  std::vector<std::uint16_t> zeros(static_cast<std::size_t>(rows * groups), 0);
  const MlxQuantized mlx{.codes = words.data(),
                         .scales = zeros.data(),
                         .biases = zeros.data(),
                         .dtype = DType::kBF16,
                         .rows = rows,
                         .cols = cols,
                         .bits = 4,
                         .group_size = 32};
  WeightView affine = packed_view(mlx, nullptr);
  ASSERT_EQ(affine.total_bytes(), q.view.total_bytes());
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(affine.total_bytes()), 0xAB);
  affine.data = buf.data();
  pack_quantized_rows(mlx, 0, rows, affine);
  const std::int64_t record = q.view.group_record_bytes(), code_bytes = 16 * 16;
  for (std::int64_t rec = 0; rec < q.view.total_bytes() / record; ++rec) {
    ASSERT_EQ(std::memcmp(buf.data() + rec * record, q.packed.data() + rec * record,
                          static_cast<std::size_t>(code_bytes)),
              0)
        << "record " << rec;
  }
  // Padding rows 53..63: zero codes, scales and biases.
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint8_t* rec = q.packed.data() + (3 * groups + g) * record;
    for (std::int64_t lane = rows % 16; lane < 16; ++lane) {
      for (int k = 0; k < 4; ++k) {
        for (int j = 0; j < 4; ++j) EXPECT_EQ(rec[k * 64 + lane * 4 + j], 0);
      }
      for (int b = 0; b < 2; ++b) {
        EXPECT_EQ(rec[code_bytes + b * 32 + lane * 2], 0);
        EXPECT_EQ(rec[code_bytes + b * 32 + lane * 2 + 1], 0);
      }
    }
  }
  std::vector<std::uint8_t> passes(q.packed.size(), 0xCD);
  WeightView w = q.view;
  w.data = passes.data();
  for (std::int64_t r0 = 0; r0 < rows; r0 += 32) {
    Mxfp4Matrix part = q.m;
    part.blocks += r0 * groups * 16;
    part.scales += r0 * groups;
    ASSERT_TRUE(pack_mxfp4_rows(part, r0, std::min<std::int64_t>(32, rows - r0), w));
  }
  EXPECT_EQ(passes, q.packed);
}

// A NaN scale (255) in the rows asked for: false, and nothing written; elsewhere it is not read.
TEST(Mxfp4, RefusesNanScales) {
  const std::int64_t rows = 40, cols = 64;
  OwnedMxfp4 q = make_mxfp4(rows, cols, 9);
  q.scales[static_cast<std::size_t>(35 * 2 + 1)] = 255;  // row 35, group 1
  std::vector<std::uint8_t> buf(q.packed.size(), 0xCD);
  WeightView w = q.view;
  w.data = buf.data();
  EXPECT_FALSE(pack_mxfp4_rows(q.m, 0, rows, w));
  EXPECT_EQ(buf, std::vector<std::uint8_t>(q.packed.size(), 0xCD));
  Mxfp4Matrix last = q.m;
  last.blocks += 32 * 2 * 16;
  last.scales += 32 * 2;
  EXPECT_FALSE(pack_mxfp4_rows(last, 32, rows - 32, w));
  EXPECT_EQ(buf, std::vector<std::uint8_t>(q.packed.size(), 0xCD));
  EXPECT_TRUE(pack_mxfp4_rows(q.m, 0, 32, w));  // rows 0..31 hold no 255
  EXPECT_EQ(
      std::memcmp(buf.data(), q.packed.data(), static_cast<std::size_t>(2 * q.view.block_bytes())),
      0);
}

// embedding_rows of an MXFP4 table: its dequantized rows.
TEST(Mxfp4, EmbeddingRowsAreDequantizedRows) {
  const OwnedMxfp4 q = make_mxfp4(37, 128, 11);
  const std::int32_t ids[4] = {36, 0, 17, 36};
  std::vector<float> got(4 * 128), want(128);
  embedding_rows(q.view, ids, 4, got.data());
  for (int i = 0; i < 4; ++i) {
    dequantize_row(q.view, ids[i], want.data());
    EXPECT_TRUE(testing::same_bytes(got.data() + i * 128, want.data(), 128)) << i;
  }
}

// The matmul is x̂·ŵ up to f32 rounding, ŵ the spec's values read straight from the released
// bytes: within half an activation step per input of float64 (as the affine test's bound).
TEST(Mxfp4, MatmulIsWithinTheActivationRoundingOfFloat64) {
  const std::int64_t rows = 37, cols = 384, n_x = 3, groups = cols / 32;
  const OwnedMxfp4 q = make_mxfp4(rows, cols, 13, 120, 130, {0, 1, 2}, 7);
  const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 14, -3, 3);
  std::vector<std::int8_t> xq(static_cast<std::size_t>(n_x * cols));
  std::vector<float> d(static_cast<std::size_t>(n_x * groups)), xs(d.size());
  for (std::int64_t r = 0; r < n_x; ++r) {
    quantize_activation_row(
        x.data() + r * cols, cols, 32,
        {.q = xq.data() + r * cols, .d = d.data() + r * groups, .xsum = xs.data() + r * groups});
  }
  std::vector<float> y(static_cast<std::size_t>(n_x * rows));
  ref::matmul_quant({.q = xq.data(), .d = d.data(), .xsum = xs.data()}, n_x, q.view, y.data(),
                    rows);
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t r = 0; r < n_x; ++r) {
      double exact = 0, bound = 0, mag = 0;
      for (std::int64_t i = 0; i < cols; ++i) {
        const double wi =
            std::ldexp(kSpecE2m1[released_code(q, n, i)], released_scale(q, n, i) - 127);
        const double xi = x[static_cast<std::size_t>(r * cols + i)];
        exact += wi * xi;
        bound += std::fabs(wi) * d[static_cast<std::size_t>(r * groups + i / 32)] * 0.5;
        // The bias form sums s·q·x̂ and −12·s·x̂ apart: f32 rounding of terms up to 12·s·|x̂|.
        mag +=
            (std::fabs(wi) + 12 * std::ldexp(1.0, released_scale(q, n, i) - 128)) * std::fabs(xi);
      }
      const double err = std::fabs(y[static_cast<std::size_t>(r * rows + n)] - exact);
      EXPECT_LE(err, bound + 1e-6 * mag) << "n " << n << " r " << r;
    }
  }
}

std::vector<float> run_matmul(ThreadPool& pool, const float* x, std::int64_t n_x,
                              const WeightView& w) {
  std::vector<float> y(static_cast<std::size_t>(n_x * w.rows));
  matmul(pool, x, n_x, w, y.data());
  return y;
}

// Every ISA's matmul has the reference's bytes (the scalar ISA runs ref::matmul_quant): weight
// rows ending inside a block and inside a two-block tile, more than one streaming chunk,
// activation rows around every tile size, gpt-oss's K, subnormal scales.
TEST(Mxfp4, EveryIsaEqualsTheReferenceBitForBit) {
  ThreadPool pool(2);
  struct Case {
    std::int64_t rows, cols;
  };
  std::uint32_t seed = 30;
  for (const auto& [rows, cols] :
       std::vector<Case>{{70, 96}, {50, 128}, {300, 64}, {37, 32}, {16, 2880}, {130, 256}}) {
    const OwnedMxfp4 q = make_mxfp4(rows, cols, ++seed, 118, 132, {0, 1, 2, 127}, 5);
    for (std::int64_t n_x : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 17, 33, 70}) {
      const auto x = random_floats(static_cast<std::size_t>(n_x * cols), seed + 100, -2, 2);
      std::vector<float> want;
      {
        testing::ScopedIsa scalar(Isa::kScalar);
        want = run_matmul(pool, x.data(), n_x, q.view);
      }
      for (Isa isa : testing::runnable_isas()) {
        testing::ScopedIsa scoped(isa);
        const std::vector<float> got = run_matmul(pool, x.data(), n_x, q.view);
        ASSERT_TRUE(testing::same_bytes(got.data(), want.data(), want.size()))
            << isa_name(isa) << " " << rows << "x" << cols << " activation rows " << n_x;
      }
    }
  }
}

// The same weights as an affine 8-bit matrix in groups of 32 (codes kMxfp4AffineCodes[c], scale
// 2^(e − 128), bias −12·2^(e − 128) in bf16): the integer dot products and the two fmas per
// group are the same on every ISA, so the bytes are too.
TEST(Mxfp4, SameBytesAsTheAffineEightBitMatrix) {
  ThreadPool pool(2);
  const std::int64_t rows = 70, cols = 2880, groups = cols / 32;
  const OwnedMxfp4 q = make_mxfp4(rows, cols, 41, 118, 132, {0, 1}, 9);
  std::vector<std::uint32_t> words(static_cast<std::size_t>(rows * cols / 4), 0);
  std::vector<std::uint16_t> scales(static_cast<std::size_t>(rows * groups)), biases(scales.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < cols; ++i) {
      words[static_cast<std::size_t>((r * cols + i) / 4)] |=
          static_cast<std::uint32_t>(kMxfp4AffineCodes[released_code(q, r, i)]) << (8 * (i % 4));
    }
    for (std::int64_t g = 0; g < groups; ++g) {
      const float s = std::ldexp(1.0f, released_scale(q, r, g * 32) - 128);
      scales[static_cast<std::size_t>(r * groups + g)] = f32_to_bf16(s);
      biases[static_cast<std::size_t>(r * groups + g)] = f32_to_bf16(-12.0f * s);
    }
  }
  const MlxQuantized mlx{.codes = words.data(),
                         .scales = scales.data(),
                         .biases = biases.data(),
                         .dtype = DType::kBF16,
                         .rows = rows,
                         .cols = cols,
                         .bits = 8,
                         .group_size = 32};
  WeightView q8 = packed_view(mlx, nullptr);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(q8.total_bytes()));
  q8.data = buf.data();
  pack_quantized_rows(mlx, 0, rows, q8);
  std::vector<float> a(static_cast<std::size_t>(cols)), b(a.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    dequantize_row(q.view, r, a.data());
    dequantize_row(q8, r, b.data());
    ASSERT_TRUE(testing::same_bytes(a.data(), b.data(), a.size())) << r;
  }
  for (std::int64_t n_x : {1, 4, 7, 9, 33}) {
    const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 42, -2, 2);
    for (Isa isa : testing::runnable_isas()) {
      testing::ScopedIsa scoped(isa);
      const std::vector<float> mx = run_matmul(pool, x.data(), n_x, q.view);
      const std::vector<float> affine = run_matmul(pool, x.data(), n_x, q8);
      ASSERT_TRUE(testing::same_bytes(mx.data(), affine.data(), mx.size()))
          << isa_name(isa) << " activation rows " << n_x;
    }
  }
}

// A row's bytes do not depend on the batch or the threads, in a fused call beside an affine q4
// g32 and a bf16 weight, on both sides of the streaming (decode) split, on every ISA.
TEST(Mxfp4, FusedDispatchIsBatchAndThreadInvariant) {
  const std::int64_t cols = 256, n_x = 21;
  const auto x = random_floats(static_cast<std::size_t>(n_x * cols), 51, -2, 2);
  const OwnedMxfp4 mx = make_mxfp4(130, cols, 52);
  const testing::OwnedQuant q4 = testing::quantize(
      random_floats(static_cast<std::size_t>(70 * cols), 53), 70, cols, 4, 32, DType::kBF16);
  const testing::OwnedWeight plain = testing::make_weight(DType::kBF16, 48, cols, 54);
  const std::int64_t widths[3] = {130, 70, 48};
  ThreadPool one(1), three(3);
  auto run = [&](ThreadPool& pool, const float* xs, std::int64_t n) {
    std::vector<float> y(static_cast<std::size_t>(n * (130 + 70 + 48)));
    const MatmulOut outs[3] = {{.w = mx.view, .y = y.data()},
                               {.w = q4.view, .y = y.data() + n * 130},
                               {.w = plain.view, .y = y.data() + n * 200}};
    matmul_fused(pool, xs, n, outs);
    return y;
  };
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    for (std::int64_t batch : {std::int64_t{5}, n_x}) {
      const std::vector<float> all = run(three, x.data(), batch);
      for (std::int64_t r = 0; r < batch; ++r) {
        const std::vector<float> alone = run(one, x.data() + r * cols, 1);
        std::int64_t at_alone = 0, at_all = 0;
        for (std::int64_t width : widths) {
          ASSERT_TRUE(testing::same_bytes(alone.data() + at_alone, all.data() + at_all + r * width,
                                          static_cast<std::size_t>(width)))
              << isa_name(isa) << " batch " << batch << " row " << r << " width " << width;
          at_alone += width;
          at_all += batch * width;
        }
      }
    }
  }
}

// matmul_grouped over MXFP4 experts (gpt-oss's MoE path): each expert's rows, picked from one x
// by index, get the bytes of a plain matmul of those rows gathered, with decode-sized and larger
// experts in one call, on every ISA.
TEST(Mxfp4, GroupedExpertsEqualTheirOwnMatmuls) {
  const std::int64_t cols = 2880, n_tokens = 40;
  const auto x = random_floats(static_cast<std::size_t>(n_tokens * cols), 61, -2, 2);
  std::vector<OwnedMxfp4> experts;
  for (std::uint32_t e = 0; e < 4; ++e)
    experts.push_back(make_mxfp4(48 + 16 * e + e, cols, 62 + e));
  // Expert e takes tokens e, e + step, ...: 1, 3, 9 and 20 rows.
  const std::int64_t n_rows[4] = {1, 3, 9, 20};
  std::vector<std::vector<std::int32_t>> ids(4);
  for (std::size_t e = 0; e < 4; ++e) {
    for (std::int64_t i = 0; i < n_rows[e]; ++i) {
      ids[e].push_back(
          static_cast<std::int32_t>((static_cast<std::int64_t>(e) + 2 * i) % n_tokens));
    }
  }
  ThreadPool pool(2);
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    std::vector<std::vector<float>> ys(4);
    std::vector<MatmulOut> outs(4);
    std::vector<MatmulGroup> groups;
    for (std::size_t e = 0; e < 4; ++e) {
      ys[e].assign(static_cast<std::size_t>(n_rows[e] * experts[e].view.rows), -1.0f);
      outs[e] = {.w = experts[e].view, .y = ys[e].data()};
      groups.push_back(
          {.x = x.data(), .n_rows = n_rows[e], .outs = {&outs[e], 1}, .rows = ids[e].data()});
    }
    matmul_grouped(pool, groups);
    for (std::size_t e = 0; e < 4; ++e) {
      std::vector<float> gathered;
      for (std::int32_t id : ids[e]) {
        gathered.insert(gathered.end(), x.begin() + id * cols, x.begin() + (id + 1) * cols);
      }
      const std::vector<float> want = run_matmul(pool, gathered.data(), n_rows[e], experts[e].view);
      ASSERT_TRUE(testing::same_bytes(ys[e].data(), want.data(), want.size()))
          << isa_name(isa) << " expert " << e;
    }
  }
}

}  // namespace
}  // namespace recur::kernels
