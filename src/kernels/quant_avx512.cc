// The quantized matmul on AVX-512 VNNI: each group's dot product is `vpdpbusd` (u8 codes × s8
// activations, four products per 32-bit lane) reduced to one exact int32, then the reference's
// f32 epilogue in its order (quant.cc). Integer sums do not depend on the order of their terms,
// so the bytes equal ref::matmul_quant's for every shape, and every row stays independent.
// Compiled with AVX-512 VNNI flags; reached only when the CPU has them (quant_dispatch.cc).
#include <immintrin.h>

#include <algorithm>

#include "kernels/quant.h"

namespace recur::kernels::detail {
namespace {

// Rows of activations computed together against one decoded group of weights.
constexpr std::int64_t kRowBlock = 8;

// The 64 codes of elements [0, 64) of a 4-bit chunk (32 bytes), in the activation order of
// quant_activation_order: per 32 elements, the 16 even ones then the 16 odd ones.
inline __m512i codes4_chunk(const std::uint8_t* p) {
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i mask = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(c, mask);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), mask);
  // [lo 0-15 | lo 16-31 | hi 0-15 | hi 16-31] -> [lo 0-15 | hi 0-15 | lo 16-31 | hi 16-31]
  const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return _mm512_shuffle_i64x2(both, both, 0b11011000);
}

inline __m256i codes4_half(const std::uint8_t* p) {  // 32 elements from 16 bytes, same order
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i mask = _mm_set1_epi8(0x0F);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(b, mask)),
                                 _mm_and_si128(_mm_srli_epi16(b, 4), mask), 1);
}

inline std::int32_t sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01001110));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10110001));
  return _mm_cvtsi128_si32(s);
}

inline std::int32_t sum_lanes(__m512i v) {
  return sum_lanes(_mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}

// One weight row against a block of up to kRowBlock activation rows, group by group: the codes
// of a group are decoded once for all rows; each row's group dot is reduced to its exact int32
// and enters the reference's two f32 sums in the reference's order.
template <int kBits, int kGroup>
void row_block(const QuantizedActivations& a, std::int64_t r0, std::int64_t nr,
               const WeightView& row, float* y, std::int64_t ldy) {
  const std::int64_t groups = row.groups();
  const auto* codes = static_cast<const std::uint8_t*>(row.data);
  float acc[kRowBlock] = {}, bias[kRowBlock] = {};
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t e = g * kGroup;
    const float s = load_as_f32(row.scales, row.dtype, g);
    const float b = load_as_f32(row.biases, row.dtype, g);
    if constexpr (kGroup == 32) {
      const __m256i c = kBits == 4
                            ? codes4_half(codes + e / 2)
                            : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + e));
      for (std::int64_t r = 0; r < nr; ++r) {
        const std::int8_t* x = a.q + (r0 + r) * row.cols + e;
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
        const std::int32_t dot = sum_lanes(_mm256_dpbusd_epi32(_mm256_setzero_si256(), c, xv));
        acc[r] += (s * a.d[(r0 + r) * groups + g]) * static_cast<float>(dot);
        bias[r] += b * a.xsum[(r0 + r) * groups + g];
      }
    } else {
      __m512i c[kGroup / 64];
      for (int k = 0; k < kGroup / 64; ++k) {
        c[k] = kBits == 4 ? codes4_chunk(codes + (e + 64 * k) / 2)
                          : _mm512_loadu_si512(reinterpret_cast<const void*>(codes + e + 64 * k));
      }
      for (std::int64_t r = 0; r < nr; ++r) {
        const std::int8_t* x = a.q + (r0 + r) * row.cols + e;
        __m512i p = _mm512_setzero_si512();
        for (int k = 0; k < kGroup / 64; ++k) {
          p = _mm512_dpbusd_epi32(p, c[k],
                                  _mm512_loadu_si512(reinterpret_cast<const void*>(x + 64 * k)));
        }
        const std::int32_t dot = sum_lanes(p);
        acc[r] += (s * a.d[(r0 + r) * groups + g]) * static_cast<float>(dot);
        bias[r] += b * a.xsum[(r0 + r) * groups + g];
      }
    }
  }
  for (std::int64_t r = 0; r < nr; ++r) y[(r0 + r) * ldy] = acc[r] + bias[r];
}

template <int kBits, int kGroup>
void matmul_rows(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w, float* y,
                 std::int64_t ldy) {
  for (std::int64_t n = 0; n < w.rows; ++n) {
    const WeightView row = w.slice_rows(n, 1);
    for (std::int64_t r0 = 0; r0 < n_rows; r0 += kRowBlock) {
      row_block<kBits, kGroup>(a, r0, std::min(kRowBlock, n_rows - r0), row, y + n, ldy);
    }
  }
}

template <int kBits>
void matmul_bits(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w, float* y,
                 std::int64_t ldy) {
  switch (w.group_size) {
    case 32:
      return matmul_rows<kBits, 32>(a, n_rows, w, y, ldy);
    case 64:
      return matmul_rows<kBits, 64>(a, n_rows, w, y, ldy);
    default:
      return matmul_rows<kBits, 128>(a, n_rows, w, y, ldy);
  }
}

}  // namespace

void matmul_quant_avx512(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w,
                         float* y, std::int64_t ldy) {
  if (w.bits == 4) {
    matmul_bits<4>(a, n_rows, w, y, ldy);
  } else {
    matmul_bits<8>(a, n_rows, w, y, ldy);
  }
}

}  // namespace recur::kernels::detail
