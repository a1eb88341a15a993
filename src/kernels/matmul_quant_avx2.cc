// The quantized matmul on AVX2 (matmul_quant_avx2.h) and its activation quantizer. AVX2 has no
// u8 x s8 dot into 32 bits, and vpmaddubsw's 16-bit pair sums would saturate on 8-bit codes
// (255·127·2 > 32767), so codes enter as 4-bit nibbles (15·127·2 fits): an 8-bit code is
// 16·high + low, each nibble's pair sums widened to 32 bits by vpmaddwd (by 16 and by 1).
// Compiled with the AVX2 + FMA + F16C flags; reached only through the AVX2 KernelTable.
#include "kernels/matmul_quant_avx2.h"

#include "kernels/quant_pick.h"

namespace recur::kernels::detail {
namespace {

struct MaddDot {
  static __m256i codes8(__m256i dot, __m256i, __m256i lo, __m256i hi, __m256i xb) {
    const __m256i sum_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xb), _mm256_set1_epi16(16));
    const __m256i sum_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xb), _mm256_set1_epi16(1));
    return _mm256_add_epi32(dot, _mm256_add_epi32(sum_hi, sum_lo));
  }
  // Each 16-bit pair sum is at most 2·15·127 (MXFP4's remapped codes: 2·24·127), so the two
  // nibbles' sums add in 16 bits.
  static __m256i codes4(__m256i dot, __m256i lo, __m256i hi, __m256i xlo, __m256i xhi) {
    const __m256i p = _mm256_maddubs_epi16(lo, xlo);
    const __m256i q = _mm256_maddubs_epi16(hi, xhi);
    return _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_add_epi16(p, q), _mm256_set1_epi16(1)));
  }
};

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
  template <int kBits, int kGroup, DType kDType, QuantCodes kCodes>
  static void block(const MatmulOperands& op, const MatmulBlock& b) {
    quant_block<MaddDot, kBits, kGroup, kDType, kCodes>(op, b);
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
