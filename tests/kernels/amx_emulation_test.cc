// The AMX block (amx_kernel.h) run on a plain C++ emulation of the tile instructions, so its
// packing, tile grid and edge handling are checked on any CPU. On a CPU with AMX the real tiles
// run in matmul_test as well.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/amx_kernel.h"
#include "kernels/kernel_table.h"
#include "kernels/reference.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

// tdpbf16ps semantics: C[m][n] += Σ_pairs A[m][2p..2p+1] · B[p][n][0..1], in f32.
struct EmulatedTiles {
  alignas(64) static inline thread_local std::uint8_t reg[8][16 * 64];
  template <int T>
  static void zero() {
    std::memset(reg[T], 0, sizeof(reg[T]));
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(reg[T] + r * 64, static_cast<const std::uint8_t*>(p) + r * stride, 64);
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(static_cast<std::uint8_t*>(p) + r * stride, reg[T] + r * 64, 64);
  }
  static void store_transposed(const float* c, float* y, std::int64_t ldy, int n_valid,
                               int m_valid) {
    detail::amx::store_transposed_scalar(c, y, ldy, n_valid, m_valid);
  }
  template <int C, int A, int B>
  static void dot() {
    // Typed copies of the raw tile bytes (no aliasing through casts).
    float c[256];
    std::uint16_t a[512], b[512];
    std::memcpy(c, reg[C], sizeof(c));
    std::memcpy(a, reg[A], sizeof(a));
    std::memcpy(b, reg[B], sizeof(b));
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        for (int p = 0; p < 16; ++p)
          for (int e = 0; e < 2; ++e)
            c[m * 16 + n] +=
                bf16_to_f32(a[m * 32 + 2 * p + e]) * bf16_to_f32(b[p * 32 + 2 * n + e]);
    std::memcpy(reg[C], c, sizeof(c));
  }
};

void emulated_matmul(const float* x, std::int64_t n_rows, const WeightView& w, float* y) {
  std::vector<std::uint16_t> packed(
      static_cast<std::size_t>(detail::amx::padded_m(n_rows) * detail::amx::padded_k(w.cols)));
  for (std::int64_t mb = 0; mb * detail::amx::kTileRows < n_rows; ++mb)
    detail::amx::pack_x_block(x, n_rows, w.cols, mb, packed.data());
  detail::MatmulOperands op{.x = x, .xp = packed.data(), .w = w, .y = y, .n_rows = n_rows};
  // The dispatcher's grid: 64 x 64 output blocks.
  for (std::int64_t m0 = 0; m0 < n_rows; m0 += 64)
    for (std::int64_t n0 = 0; n0 < w.rows; n0 += 64)
      detail::amx::block<EmulatedTiles>(
          op,
          {.m0 = m0, .m1 = std::min(n_rows, m0 + 64), .n0 = n0, .n1 = std::min(w.rows, n0 + 64)});
}

TEST(AmxEmulation, MatchesReferenceOnOddShapes) {
  int case_id = 0;
  for (std::int64_t k_dim : {1, 31, 32, 33, 70}) {
    for (std::int64_t n_out : {1, 16, 17, 40, 100}) {
      for (std::int64_t n_rows : {1, 15, 16, 17, 33, 70}) {
        ++case_id;
        auto w = testing::make_weight(DType::kBF16, n_out, k_dim, case_id, case_id % 2);
        auto x = testing::random_floats(static_cast<std::size_t>(n_rows * k_dim), case_id + 3);
        std::vector<float> got(static_cast<std::size_t>(n_rows * n_out), -1.0f);
        std::vector<float> want(got.size());
        emulated_matmul(x.data(), n_rows, w.view, got.data());
        ref::matmul(x.data(), n_rows, w.view, want.data(), n_out);
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
              << "K " << k_dim << " N " << n_out << " rows " << n_rows << " at " << i;
      }
    }
  }
}

TEST(AmxEmulation, RowsAreBatchInvariant) {
  const std::int64_t k_dim = 100, n_out = 50, rows = 40;
  auto w = testing::make_weight(DType::kBF16, n_out, k_dim, 5);
  auto x = testing::random_floats(static_cast<std::size_t>(rows * k_dim), 6);
  std::vector<float> full(static_cast<std::size_t>(rows * n_out));
  emulated_matmul(x.data(), rows, w.view, full.data());
  std::vector<float> one(static_cast<std::size_t>(n_out));
  for (std::int64_t r = 0; r < rows; ++r) {
    emulated_matmul(x.data() + r * k_dim, 1, w.view, one.data());
    ASSERT_TRUE(testing::same_bytes(one.data(), full.data() + r * n_out, one.size())) << r;
  }
}

// The vectorised packing the real tiles read (matmul_amx.cc, AVX-512 instructions only) writes
// pack_x_block's bytes: rounding ties, NaN, infinities, K tails and rows past the end included.
TEST(AmxEmulation, VectorPackingEqualsThePlainLayoutBitForBit) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  const auto& path = detail::kAmxKernels.matmul_bf16;
  int case_id = 0;
  for (std::int64_t k_dim : {1, 15, 16, 17, 31, 32, 33, 70, 1024}) {
    for (std::int64_t n_rows : {1, 5, 16, 17, 40}) {
      auto x = testing::random_floats(static_cast<std::size_t>(n_rows * k_dim), ++case_id);
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::infinity(), -0.0f,
                                1.0f + 1.0f / 256,  // a tie: rounds to even
                                1.0f + 3.0f / 256, std::numeric_limits<float>::denorm_min()};
      for (std::size_t i = 0; i < x.size(); i += 7) x[i] = specials[i / 7 % 6];
      const detail::ActivationRows rows{.x = x.data(), .n_rows = n_rows, .k_dim = k_dim};
      const auto words = static_cast<std::size_t>(path.x_bytes(rows) / 2);
      std::vector<std::uint16_t> want(words, 0xAAAA), got(words, 0x5555);
      for (std::int64_t r0 = 0; r0 < n_rows; r0 += detail::kPrepRows) {
        detail::amx::pack_x_block(x.data(), n_rows, k_dim, r0 / detail::kPrepRows, want.data());
        path.prepare_x(rows, r0, std::min(n_rows, r0 + detail::kPrepRows), got.data());
      }
      ASSERT_EQ(got, want) << "K " << k_dim << " rows " << n_rows;
    }
  }
}

}  // namespace
}  // namespace recur::kernels
