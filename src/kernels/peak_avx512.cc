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

// The loop is written in assembly: GCC 12 keeps a copy of every accumulator it passes to the
// vpdpbusd intrinsic and, short of registers at 24 of them, spilled to the stack inside the loop,
// which measured 2.8 instead of 6.9 G instructions/s per core on the Zen 5 VM (the int8 peak
// 0.8x the bf16 one instead of 2x, every "of the int8 peak" figure inflated 2.4x).
double peak_loop_avx512_int8(std::int64_t iterations) {
  constexpr int kAcc = 24;
  if (iterations < 1) return 0;
  std::int64_t n = iterations;
  const __m512i a = _mm512_set1_epi8(1);
  const __m512i b = _mm512_set1_epi8(0);
  // zmm8-zmm31 are the accumulators; a and b in zmm0 / zmm1.
#define RECUR_DP8(x, y, z, w, p, q, r, t)                                         \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #x "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #y     \
  "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #z "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #w \
  "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #p "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #q \
  "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #r "\n\tvpdpbusd %%zmm1, %%zmm0, %%zmm" #t "\n\t"
  __asm__ volatile(
      "vmovdqa64 %[a], %%zmm0\n\t"
      "vmovdqa64 %[b], %%zmm1\n\t"
      "1:\n\t" RECUR_DP8(8, 9, 10, 11, 12, 13, 14, 15) RECUR_DP8(16, 17, 18, 19, 20, 21, 22, 23)
          RECUR_DP8(24, 25, 26, 27, 28, 29, 30, 31) "dec %[n]\n\t"
                                                    "jnz 1b\n\t"
      : [n] "+r"(n)
      : [a] "v"(a), [b] "v"(b)
      : "cc", "xmm0", "xmm1", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
        "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
#undef RECUR_DP8
  return static_cast<double>(iterations) * kAcc * 16 * 4 * 2;  // lanes x bytes x (mul + add)
}

}  // namespace recur::kernels::detail
