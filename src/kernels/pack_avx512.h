// Internal to kernels/: AVX-512 helpers that pack activations, shared by the files compiled with
// AVX-512 flags (matmul_lanes_avx512.cc, matmul_amx.cc). Internal linkage: an inline function
// shared across objects could let the linker hand an AVX-512 copy to code built without it.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace recur::kernels::detail {
namespace {

// Transposes 16 rows of 16 dwords (a 16x16 block of bf16 pairs) in place.
inline void transpose16(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  __m512i u[16];  // u[4i + j]: rows 4i..4i+3 of column 4L + j in 128-bit lane L
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i w0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    const __m512i v1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_i32x4(v0, v1, 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(v0, v1, 0xDD);
    r[4 + j] = _mm512_shuffle_i32x4(w0, w1, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(w0, w1, 0xDD);
  }
}

// 32 floats (two vectors) rounded to bf16 exactly as f32_to_bf16 (nearest even, NaN kept quiet),
// in order: 16 bf16 pairs.
inline __m512i to_bf16_pairs(__m512 a, __m512 b) {
  auto round = [](__m512 f) {
    const __m512i u = _mm512_castps_si512(f);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
  };
  return _mm512_inserti64x4(_mm512_castsi256_si512(round(a)), round(b), 1);
}

// The next 32 columns of 16 rows (x: the first row's column, ld floats between rows; `valid` rows,
// the others zero; `left` columns remain in each row, those past it zero), rounded to bf16
// pairs and transposed: r[j] holds pair j of the 16 rows, one row per 32-bit lane.
inline void pair_columns(const float* x, std::int64_t ld, int valid, std::int64_t left,
                         __m512i (&r)[16]) {
  const __mmask16 lo = _cvtu32_mask16(left >= 16 ? 0xffffu : (1u << left) - 1u);
  const __mmask16 hi = _cvtu32_mask16(left >= 32   ? 0xffffu
                                      : left <= 16 ? 0u
                                                   : (1u << (left - 16)) - 1u);
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm512_setzero_si512();
    if (i >= valid) continue;
    const float* src = x + i * ld;
    r[i] = to_bf16_pairs(_mm512_maskz_loadu_ps(lo, src), _mm512_maskz_loadu_ps(hi, src + 16));
  }
  transpose16(r);
}

}  // namespace
}  // namespace recur::kernels::detail
