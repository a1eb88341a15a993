// The quantized matmul on AVX2 over quant.h's packed layout: each 64-byte vector of a group
// record is two 32-byte halves, rows 0-7 and rows 8-15 of the block, so a half is 8 rows' 32-bit
// lanes. AVX2 has no u8 x s8 dot into 32 bits, and vpmaddubsw's 16-bit pair sums would saturate
// on 8-bit codes (255·127·2 > 32767), so codes enter as 4-bit nibbles (15·127·2 fits): an 8-bit
// code is 16·high + low, each nibble's pair sums widened to 32 bits by vpmaddwd (by 16 and by 1).
// The integer dot products are exact, and each lane's f32 operations are the reference's in its
// order, so the bytes equal ref::matmul_quant's.
// Compiled with the AVX2 + FMA + F16C flags; reached only through the AVX2 KernelTable.
#include <immintrin.h>

#include <algorithm>

#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "kernels/quant_pick.h"

namespace recur::kernels::detail {
namespace {

constexpr int kTileRows = 4;
constexpr std::int64_t kHalfRows = kQuantBlockRows / 2;

// The 8 values of one half's rows from a 16-value array of group parameters.
inline __m256 load_group_params(const std::uint8_t* p, DType dtype, int half) {
  switch (dtype) {
    case DType::kBF16:
      return _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * half))),
          16));
    case DType::kF16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * half)));
    case DType::kF32:
      break;
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * half);
}

inline __m256i broadcast4(const std::int8_t* p) {
  std::int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Activation rows [r0, r0 + kRows) against one half (8 weight rows) of a block; `mask` holds
// all-ones in the lanes of rows that exist.
template <int kBits, int kGroup, DType kDType, int kRows>
void half_tile(const QuantizedActivations& a, std::int64_t r0, const std::uint8_t* block,
               std::int64_t cols, int half, float* y, std::int64_t ldy, __m256i mask) {
  constexpr std::int64_t kCodeBytes = kQuantBlockRows * kGroup * kBits / 8;
  constexpr std::int64_t kParamBytes = kQuantBlockRows * (kDType == DType::kF32 ? 4 : 2);
  constexpr std::int64_t kRecordBytes = kCodeBytes + 2 * kParamBytes;
  const std::int64_t groups = cols / kGroup;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i sixteens = _mm256_set1_epi16(16);
  __m256 acc[kRows], bias[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = bias[r] = _mm256_setzero_ps();
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint8_t* rec = block + g * kRecordBytes;
    const std::int8_t* x[kRows];
    for (int r = 0; r < kRows; ++r) x[r] = a.q + (r0 + r) * cols + g * kGroup;
    __m256i dot[kRows];
    for (int r = 0; r < kRows; ++r) dot[r] = _mm256_setzero_si256();
    constexpr int kStep = kBits == 8 ? 4 : 8;  // elements per 32-bit lane of a code vector
    for (int k = 0; k < kGroup / kStep; ++k) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 64 * k + 32 * half));
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      for (int r = 0; r < kRows; ++r) {
        if constexpr (kBits == 8) {
          const __m256i xb = broadcast4(x[r] + 4 * k);
          const __m256i sum_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xb), sixteens);
          const __m256i sum_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xb), ones);
          dot[r] = _mm256_add_epi32(dot[r], _mm256_add_epi32(sum_hi, sum_lo));
        } else {
          // Each 16-bit pair sum is at most 2·15·127, so the two nibbles' sums add in 16 bits.
          const __m256i p = _mm256_maddubs_epi16(lo, broadcast4(x[r] + 8 * k));
          const __m256i q = _mm256_maddubs_epi16(hi, broadcast4(x[r] + 8 * k + 4));
          dot[r] = _mm256_add_epi32(dot[r], _mm256_madd_epi16(_mm256_add_epi16(p, q), ones));
        }
      }
    }
    const __m256 s = load_group_params(rec + kCodeBytes, kDType, half);
    const __m256 b = load_group_params(rec + kCodeBytes + kParamBytes, kDType, half);
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t at = (r0 + r) * groups + g;
      const __m256 sd = _mm256_mul_ps(s, _mm256_set1_ps(a.d[at]));
      acc[r] = _mm256_fmadd_ps(sd, _mm256_cvtepi32_ps(dot[r]), acc[r]);
      bias[r] = _mm256_fmadd_ps(b, _mm256_set1_ps(a.xsum[at]), bias[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm256_maskstore_ps(y + (r0 + r) * ldy, mask, _mm256_add_ps(acc[r], bias[r]));
  }
}

template <int kBits, int kGroup, DType kDType>
void quant_block(const MatmulOperands& op, const MatmulBlock& b) {
  const WeightView& w = op.w;
  const QuantizedActivations a =
      quantized_rows_view(const_cast<void*>(op.xp), op.n_rows, w.cols, kGroup);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (std::int64_t n = b.n0; n < b.n1; n += kQuantBlockRows) {
    const auto* block = static_cast<const std::uint8_t*>(w.slice_rows(n, 0).data);
    for (int half = 0; half < 2; ++half) {
      const std::int64_t first = n + half * kHalfRows;
      const std::int64_t lanes = std::min<std::int64_t>(kHalfRows, w.rows - first);
      if (lanes <= 0) break;
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), lane);
      float* y = op.y + first;
      std::int64_t r = b.m0;
      for (; r + kTileRows <= b.m1; r += kTileRows) {
        half_tile<kBits, kGroup, kDType, kTileRows>(a, r, block, w.cols, half, y, w.rows, mask);
      }
      for (; r < b.m1; ++r) {
        half_tile<kBits, kGroup, kDType, 1>(a, r, block, w.cols, half, y, w.rows, mask);
      }
    }
  }
}

inline float max_lanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline std::int32_t sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01001110));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10110001));
  return _mm_cvtsi128_si32(s);
}

// The block functions of every format, for run_quant_block (quant_pick.h).
struct Avx2Quant {
  template <int kBits, int kGroup, DType kDType>
  static void block(const MatmulOperands& op, const MatmulBlock& b) {
    quant_block<kBits, kGroup, kDType>(op, b);
  }
};

}  // namespace

// quantize_activation_row's arithmetic 8 inputs at a time (as quantize_x_rows_avx512).
void quantize_x_rows_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  const QuantizedActivations all = quantized_rows_view(out, a.n_rows, a.k_dim, a.group_size);
  const std::int64_t groups = a.k_dim / a.group_size;
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* x = a.row(r) + g * a.group_size;
      std::int8_t* q = all.q + r * a.k_dim + g * a.group_size;
      __m256 m = _mm256_setzero_ps();
      for (int i = 0; i < a.group_size; i += 8) {
        m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + i), sign));
      }
      const float amax = max_lanes(m);
      const std::int64_t at = r * groups + g;
      if (amax == 0.0f) {
        std::fill(q, q + a.group_size, std::int8_t{0});
        all.d[at] = 0.0f;
        all.xsum[at] = 0.0f;
        continue;
      }
      const __m256 inv = _mm256_set1_ps(127.0f / amax);
      __m256i sum = _mm256_setzero_si256();
      for (int i = 0; i < a.group_size; i += 8) {
        const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
        sum = _mm256_add_epi32(sum, qi);
        alignas(32) std::int32_t lanes[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), qi);
        for (int j = 0; j < 8; ++j) q[i + j] = static_cast<std::int8_t>(lanes[j]);
      }
      all.d[at] = amax / 127.0f;
      all.xsum[at] = all.d[at] * static_cast<float>(sum_lanes(sum));
    }
  }
}

void matmul_block_quant_avx2(const MatmulOperands& op, const MatmulBlock& b) {
  run_quant_block<Avx2Quant>(op, b);
}

}  // namespace recur::kernels::detail
