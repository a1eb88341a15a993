// Register-only vdpbf16ps and vpdpbusd loops: 24 independent accumulators hide the latency, no
// memory traffic.
#include <immintrin.h>

#include "kernels/peak_loops.h"

namespace recur::kernels::detail {

double peak_loop_avx512_bf16(std::int64_t iterations) {
  constexpr int kAcc = 24;
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512i a = _mm512_set1_epi16(0x3f80);  // bf16 1.0
  __m512i b = _mm512_set1_epi16(0x0000);
  for (std::int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile("" : "+v"(a), "+v"(b));  // opaque inputs: nothing can be hoisted or folded
#pragma GCC unroll 24
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
  }
  float sink = 0;
  for (int i = 0; i < kAcc; ++i) sink += _mm512_reduce_add_ps(acc[i]);
  __asm__ volatile("" : : "x"(sink));
  return static_cast<double>(iterations) * kAcc * 16 * 2 * 2;  // lanes x pairs x (mul + add)
}

double peak_loop_avx512_int8(std::int64_t iterations) {
  constexpr int kAcc = 24;
  __m512i acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(1);
  __m512i b = _mm512_set1_epi8(0);
  for (std::int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile("" : "+v"(a), "+v"(b));
#pragma GCC unroll 24
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  std::int32_t sink = 0;
  for (int i = 0; i < kAcc; ++i) sink += _mm512_reduce_add_epi32(acc[i]);
  __asm__ volatile("" : : "r"(sink));
  return static_cast<double>(iterations) * kAcc * 16 * 4 * 2;  // lanes x bytes x (mul + add)
}

}  // namespace recur::kernels::detail
