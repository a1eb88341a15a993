// Register-only loops of what the AVX2 kernels run on: vfmadd231ps (the f32 arithmetic of bf16 and
// f16 weights, converted to f32 on AVX2), the quantized matmul's AVX2 int8 sequence (two
// vpmaddubsw on a weight's nibbles, their 16-bit sums added, widened by vpmaddwd, added to a
// 32-bit lane: matmul_quant_avx2.cc's 4-bit step) and AVX-VNNI's vpdpbusd in 256-bit form.
// Written in assembly for the reason peak_avx512.cc gives: GCC keeps copies of accumulators it
// passes to intrinsics and spills them.
#include <immintrin.h>

#include "kernels/peak_loops.h"

namespace recur::kernels::detail {

double peak_loop_avx2_f32(std::int64_t iterations) {
  if (iterations < 1) return 0;
  constexpr int kAcc = 12;
  std::int64_t n = iterations;
  const __m256 a = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(0.0f);
#define RECUR_FMA4(x, y, z, w)                                                      \
  "vfmadd231ps %%ymm1, %%ymm0, %%ymm" #x "\n\tvfmadd231ps %%ymm1, %%ymm0, %%ymm" #y \
  "\n\tvfmadd231ps %%ymm1, %%ymm0, %%ymm" #z "\n\tvfmadd231ps %%ymm1, %%ymm0, %%ymm" #w "\n\t"
  __asm__ volatile(
      "vmovaps %[a], %%ymm0\n\t"
      "vmovaps %[b], %%ymm1\n\t"
      "1:\n\t" RECUR_FMA4(4, 5, 6, 7) RECUR_FMA4(8, 9, 10, 11) RECUR_FMA4(12, 13, 14, 15)
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [a] "x"(a), [b] "x"(b)
      : "cc", "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15");
#undef RECUR_FMA4
  return static_cast<double>(iterations) * kAcc * 8 * 2;  // lanes x (mul + add)
}

double peak_loop_avx2_int8(std::int64_t iterations) {
  if (iterations < 1) return 0;
  constexpr int kAcc = 4;
  std::int64_t n = iterations;
  // From memory: the loop takes all 16 registers.
  alignas(32) const __m256i lo = _mm256_set1_epi8(1), hi = _mm256_set1_epi8(2);
  alignas(32) const __m256i x = _mm256_set1_epi8(0), ones = _mm256_set1_epi16(1);
  // ymm0-3: lo, hi, x, ones; ymm4-7 the accumulators; ymm8-15 temporaries (two per chain).
#define RECUR_Q4(acc, p, q)                   \
  "vpmaddubsw %%ymm2, %%ymm0, %%ymm" #p       \
  "\n\t"                                      \
  "vpmaddubsw %%ymm2, %%ymm1, %%ymm" #q       \
  "\n\t"                                      \
  "vpaddw %%ymm" #q ", %%ymm" #p ", %%ymm" #p \
  "\n\t"                                      \
  "vpmaddwd %%ymm3, %%ymm" #p ", %%ymm" #p    \
  "\n\t"                                      \
  "vpaddd %%ymm" #p ", %%ymm" #acc ", %%ymm" #acc "\n\t"
  __asm__ volatile(
      "vmovdqa %[lo], %%ymm0\n\t"
      "vmovdqa %[hi], %%ymm1\n\t"
      "vmovdqa %[x], %%ymm2\n\t"
      "vmovdqa %[ones], %%ymm3\n\t"
      "vpxor %%ymm4, %%ymm4, %%ymm4\n\t"
      "vpxor %%ymm5, %%ymm5, %%ymm5\n\t"
      "vpxor %%ymm6, %%ymm6, %%ymm6\n\t"
      "vpxor %%ymm7, %%ymm7, %%ymm7\n\t"
      "1:\n\t" RECUR_Q4(4, 8, 9) RECUR_Q4(5, 10, 11) RECUR_Q4(6, 12, 13) RECUR_Q4(7, 14, 15)
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [lo] "m"(lo), [hi] "m"(hi), [x] "m"(x), [ones] "m"(ones)
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#undef RECUR_Q4
  return static_cast<double>(iterations) * kAcc * 64 * 2;  // byte products x (mul + add)
}

double peak_loop_avxvnni_int8(std::int64_t iterations) {
  if (iterations < 1) return 0;
  constexpr int kAcc = 12;
  std::int64_t n = iterations;
  const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(0);
#define RECUR_DP4(x, y, z, w)                                                                     \
  "%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #x "\n\t%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #y     \
  "\n\t%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #z "\n\t%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #w \
  "\n\t"
  __asm__ volatile(
      "vmovdqa %[a], %%ymm0\n\t"
      "vmovdqa %[b], %%ymm1\n\t"
      "1:\n\t" RECUR_DP4(4, 5, 6, 7) RECUR_DP4(8, 9, 10, 11) RECUR_DP4(12, 13, 14, 15)
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : [n] "+r"(n)
      : [a] "x"(a), [b] "x"(b)
      : "cc", "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15");
#undef RECUR_DP4
  return static_cast<double>(iterations) * kAcc * 32 * 2;  // byte products x (mul + add)
}

}  // namespace recur::kernels::detail
