// The AMX-INT8 quantized block (amx_quant_kernel.h) on a plain C++ emulation of the tile
// instructions, so its tile grid, nibble split, group chunks and edges are checked on any CPU
// against ref::matmul_quant, byte for byte. On a CPU with AMX the real tiles run in quant_test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/amx_quant_kernel.h"
#include "kernels/reference.h"
#include "quant_util.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

// Tiles as configured by configure(chunk): C 16 x 64 bytes, A 16 x chunk, B chunk/4 x 64.
struct EmulatedInt8Tiles {
  alignas(64) static inline thread_local std::uint8_t reg[8][16 * 64];
  static inline thread_local int chunk = 0;
  static int rows(int t) { return t >= 6 ? chunk / 4 : 16; }
  static int colsb(int t) { return t == 4 || t == 5 ? chunk : 64; }
  static void configure(int c) { chunk = c; }
  static void release() { chunk = 0; }
  template <int T>
  static void zero() {
    std::memset(reg[T], 0, sizeof(reg[T]));
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    ASSERT_GT(chunk, 0) << "tile loaded before configure";
    std::memset(reg[T], 0, sizeof(reg[T]));
    for (int r = 0; r < rows(T); ++r)
      std::memcpy(reg[T] + r * 64, static_cast<const std::uint8_t*>(p) + r * stride,
                  static_cast<std::size_t>(colsb(T)));
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(static_cast<std::uint8_t*>(p) + r * stride, reg[T] + r * 64, 64);
  }
  template <int C, int A, int B>
  static void dot() {
    std::int32_t c[256];
    std::memcpy(c, reg[C], sizeof(c));
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        for (int k = 0; k < chunk; ++k)
          c[m * 16 + n] += static_cast<std::int8_t>(reg[A][m * 64 + k]) *
                           static_cast<std::int32_t>(reg[B][(k / 4) * 64 + 4 * n + k % 4]);
    std::memcpy(reg[C], c, sizeof(c));
  }
  template <QuantCodes kCodes>
  static void unpack4(const std::uint8_t* in, int vectors, std::uint8_t* out) {
    const auto code = [](int c) {
      return kCodes == QuantCodes::kMxfp4 ? kMxfp4AffineCodes[c] : static_cast<std::uint8_t>(c);
    };
    for (int k = 0; k < vectors; ++k)
      for (int j = 0; j < 64; ++j) {
        out[128 * k + j] = code(in[64 * k + j] & 15);
        out[128 * k + 64 + j] = code(in[64 * k + j] >> 4);
      }
  }
  template <DType kDType>
  static void params(const std::uint8_t* p, float* out) {
    for (int i = 0; i < 16; ++i) {
      if constexpr (kDType == DType::kF32) {
        std::memcpy(out + i, p + 4 * i, 4);
      } else {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = kDType == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
    }
  }
  static void fold(const std::int32_t* c, const float* s, const float* b, const float* d,
                   const float* xsum, std::int64_t stride, int rows, float* acc, float* bias) {
    for (int r = 0; r < rows; ++r)
      for (int n = 0; n < 16; ++n) {
        const float sd = s[n] * d[r * stride];
        acc[16 * r + n] = std::fma(sd, static_cast<float>(c[16 * r + n]), acc[16 * r + n]);
        bias[16 * r + n] = std::fma(b[n], xsum[r * stride], bias[16 * r + n]);
      }
  }
  static void finish(const float* acc, const float* bias, float* y, std::int64_t ldy, int rows,
                     int cols) {
    for (int r = 0; r < rows; ++r)
      for (int n = 0; n < cols; ++n) y[r * ldy + n] = acc[16 * r + n] + bias[16 * r + n];
  }
};

template <int kBits, int kGroup, DType kDType, QuantCodes kCodes = QuantCodes::kAffine>
void emulated_block(const detail::MatmulOperands& op, const detail::MatmulBlock& b) {
  detail::amx_quant::block<EmulatedInt8Tiles, kBits, kGroup, kDType, kCodes>(op, b);
}

using BlockFn = void (*)(const detail::MatmulOperands&, const detail::MatmulBlock&);

template <int kBits, int kGroup>
BlockFn pick(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return emulated_block<kBits, kGroup, DType::kBF16>;
    case DType::kF16:
      return emulated_block<kBits, kGroup, DType::kF16>;
    case DType::kF32:
      break;
  }
  return emulated_block<kBits, kGroup, DType::kF32>;
}

BlockFn pick(int bits, int group, DType dtype) {
  if (bits == 4) {
    return group == 32   ? pick<4, 32>(dtype)
           : group == 64 ? pick<4, 64>(dtype)
                         : pick<4, 128>(dtype);
  }
  return group == 32 ? pick<8, 32>(dtype) : group == 64 ? pick<8, 64>(dtype) : pick<8, 128>(dtype);
}

// The activations as the AMX path prepares them: quant.h's rows padded to 16, codes in tile
// order, computed here with the scalar quantizer; padding rows hold junk (their products must
// not reach any output).
std::vector<std::uint8_t> prepare(const std::vector<float>& x, std::int64_t n_rows,
                                  std::int64_t cols, int group) {
  const std::int64_t padded = detail::amx_quant::padded_rows(n_rows);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(quantized_rows_bytes(padded, cols, group)),
                                0x7F);
  const QuantizedActivations all = quantized_rows_view(buf.data(), padded, cols, group);
  const std::int64_t groups = cols / group;
  const int chunk = detail::amx_quant::chunk_bytes(group);
  std::vector<std::int8_t> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < n_rows; ++r) {
    quantize_activation_row(
        x.data() + r * cols, cols, group,
        {.q = row.data(), .d = all.d + r * groups, .xsum = all.xsum + r * groups});
    for (std::int64_t c = 0; c < cols; ++c)
      all.q[detail::amx_quant::tile_offset(r, c, cols, chunk)] = row[static_cast<std::size_t>(c)];
  }
  return buf;
}

// The same integers in quant.h's row layout, for the reference.
std::vector<std::uint8_t> plain(const std::vector<float>& x, std::int64_t n_rows, std::int64_t cols,
                                int group) {
  std::vector<std::uint8_t> buf(
      static_cast<std::size_t>(quantized_rows_bytes(n_rows, cols, group)));
  const QuantizedActivations all = quantized_rows_view(buf.data(), n_rows, cols, group);
  const std::int64_t groups = cols / group;
  for (std::int64_t r = 0; r < n_rows; ++r)
    quantize_activation_row(
        x.data() + r * cols, cols, group,
        {.q = all.q + r * cols, .d = all.d + r * groups, .xsum = all.xsum + r * groups});
  return buf;
}

// Every format, weight rows ending inside a block and inside a 32-row pair, activation rows
// around the tiles and past one 64-row pass, and blocks cut as the dispatcher cuts them.
TEST(AmxQuantEmulation, EqualsTheReferenceBitForBit) {
  struct Case {
    int bits, group;
    DType dtype;
    std::int64_t cols;
  };
  std::vector<Case> cases;
  for (int bits : {4, 8})
    for (int group : {32, 64, 128})
      for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32})
        cases.push_back({bits, group, dtype, group * (dtype == DType::kF16 ? 3 : 2)});
  int seed = 0;
  for (const auto& [bits, group, dtype, cols] : cases) {
    for (std::int64_t w_rows : {16, 40, 70}) {
      ++seed;
      const auto q =
          testing::quantize(testing::random_floats(static_cast<std::size_t>(w_rows * cols), seed),
                            w_rows, cols, bits, group, dtype);
      for (std::int64_t n_rows : {1, 15, 17, 33, 70}) {
        const auto x =
            testing::random_floats(static_cast<std::size_t>(n_rows * cols), seed + 100, -2, 2);
        std::vector<std::uint8_t> xp = prepare(x, n_rows, cols, group);
        std::vector<float> want(static_cast<std::size_t>(n_rows * w_rows));
        std::vector<std::uint8_t> rows = plain(x, n_rows, cols, group);
        ref::matmul_quant(quantized_rows_view(rows.data(), n_rows, cols, group), n_rows, q.view,
                          want.data(), w_rows);
        std::vector<float> got(want.size(), -1.0f);
        const detail::MatmulOperands op{
            .x = x.data(), .xp = xp.data(), .w = q.view, .y = got.data(), .n_rows = n_rows};
        const BlockFn fn = pick(bits, group, dtype);
        for (std::int64_t m0 = 0; m0 < n_rows; m0 += 64)
          for (std::int64_t n0 = 0; n0 < w_rows; n0 += 64)
            fn(op, {.m0 = m0,
                    .m1 = std::min(n_rows, m0 + 64),
                    .n0 = n0,
                    .n1 = std::min(w_rows, n0 + 64)});
        ASSERT_TRUE(testing::same_bytes(got.data(), want.data(), got.size()))
            << "bits " << bits << " group " << group << " dtype " << static_cast<int>(dtype)
            << " weight rows " << w_rows << " activation rows " << n_rows;
      }
    }
  }
}

// MXFP4 views (4 bits, groups of 32, bf16, e2m1 codes remapped in unpack4): the same grid of
// weight and activation rows, subnormal and ordinary scales.
TEST(AmxQuantEmulation, Mxfp4EqualsTheReferenceBitForBit) {
  int seed = 200;
  for (std::int64_t cols : {32, 96, 256}) {
    for (std::int64_t w_rows : {16, 40, 70}) {
      ++seed;
      const auto q = testing::make_mxfp4(w_rows, cols, static_cast<std::uint32_t>(seed), 118, 132,
                                         {0, 1, 2}, 5);
      for (std::int64_t n_rows : {1, 15, 17, 33, 70}) {
        const auto x =
            testing::random_floats(static_cast<std::size_t>(n_rows * cols), seed + 100, -2, 2);
        std::vector<std::uint8_t> xp = prepare(x, n_rows, cols, 32);
        std::vector<float> want(static_cast<std::size_t>(n_rows * w_rows));
        std::vector<std::uint8_t> rows = plain(x, n_rows, cols, 32);
        ref::matmul_quant(quantized_rows_view(rows.data(), n_rows, cols, 32), n_rows, q.view,
                          want.data(), w_rows);
        std::vector<float> got(want.size(), -1.0f);
        const detail::MatmulOperands op{
            .x = x.data(), .xp = xp.data(), .w = q.view, .y = got.data(), .n_rows = n_rows};
        for (std::int64_t m0 = 0; m0 < n_rows; m0 += 64)
          for (std::int64_t n0 = 0; n0 < w_rows; n0 += 64)
            emulated_block<4, 32, DType::kBF16, QuantCodes::kMxfp4>(
                op, {.m0 = m0,
                     .m1 = std::min(n_rows, m0 + 64),
                     .n0 = n0,
                     .n1 = std::min(w_rows, n0 + 64)});
        ASSERT_TRUE(testing::same_bytes(got.data(), want.data(), got.size()))
            << "cols " << cols << " weight rows " << w_rows << " activation rows " << n_rows;
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels
