// Internal to kernels/: the 16-lane vector math the vector kernels (vec_ops.h, vec_recurrence.h,
// vec_attention*.h) are written in: GCC vectors, fixed-order sums, a fused multiply-add and a
// polynomial exp that give the same bytes on AVX2 and AVX-512. Not a SIMD library: only what
// those kernels use.
// These headers are compiled once per vector ISA: kernels_avx2.cc and kernels_avx512.cc include
// them with their ISA flags (and -ffp-contract=off), so both compile the same arithmetic in the
// same order, and each exports the results only through its KernelTable (kernel_table.h):
// - elementwise loops (over head_dim, Dv, d_state) keep the reference's exact order;
// - reductions use dot_lanes(): 16 running partial sums then a fixed pairwise tree, an order that
//   depends only on the length, never on batch, chunking or threads.
// Everything is in an anonymous namespace, so each ISA file has its own copy of every function
// (internal linkage): an inline function shared under one name could be resolved by the linker
// to the copy built for the wider ISA. For the same reason no std:: algorithm templates are used
// (they are not in the anonymous namespace; tests/kernels/check_isa_symbols.sh checks).
#pragma once

#ifndef __AVX2__
#error "the vector kernels are compiled only in the ISA files (kernels_avx2.cc, kernels_avx512.cc)"
#endif

#include <immintrin.h>

#include <cstdint>

namespace recur::kernels::detail::vec {
namespace {

inline float max_f(float a, float b) { return a > b ? a : b; }
inline float min_f(float a, float b) { return a < b ? a : b; }
inline std::int64_t min_i(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

inline constexpr int kLanes = 16;

// 16 lanes as one GCC vector (one zmm, or two ymm on avx2): lane-wise arithmetic is the same on
// both ISAs, and the compiler cannot reorder it (no -ffast-math, no contraction).
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));
typedef float V2 __attribute__((vector_size(8)));

inline V16 load16(const float* p) {
  V16 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline void store16(float* p, V16 v) { __builtin_memcpy(p, &v, sizeof(v)); }
inline V16 splat16(float x) { return V16{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
inline V8 splat8(float x) { return V8{x, x, x, x, x, x, x, x}; }
// One register of floats: 16 lanes on AVX-512, 8 on AVX2, for elementwise kernels written once for
// both (GCC splits the 16-lane type through memory on AVX2; as the same vector type as V16 or V8,
// VN takes their overloads).
#ifdef __AVX512F__
inline constexpr int kNativeLanes = 16;
#else
inline constexpr int kNativeLanes = 8;
#endif
typedef float VN __attribute__((vector_size(4 * kNativeLanes)));

// A vector of any width from memory and back (kernels written once for V8 and V16).
template <typename V>
inline V load_v(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
template <typename V>
inline void store_v(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof(v));
}

// The fixed pairwise tree: lane l += lane l + w for w = 8, 4, 2, 1; lane 0 is the sum.
inline float tree_sum(V16 p) {
  const V8 s8 = __builtin_shufflevector(p, p, 0, 1, 2, 3, 4, 5, 6, 7) +
                __builtin_shufflevector(p, p, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4 s4 =
      __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const V2 s2 = __builtin_shufflevector(s4, s4, 0, 1) + __builtin_shufflevector(s4, s4, 2, 3);
  return s2[0] + s2[1];
}

// tree_sum of the 16 lanes lo then hi (lanes 0-7 and 8-15), in AVX2's registers.
inline float tree_sum(V8 lo, V8 hi) {
  const V8 s8 = lo + hi;
  const V4 s4 =
      __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const V2 s2 = __builtin_shufflevector(s4, s4, 0, 1) + __builtin_shufflevector(s4, s4, 2, 3);
  return s2[0] + s2[1];
}

// Lane l sums a[i]·b[i] over i ≡ l (mod 16) in increasing i, then tree_sum. A partial last chunk
// adds zero products to the lanes past n, which leaves them unchanged (a lane is never −0).
// On AVX2 the 16 lanes are two 8-lane registers (the 16-lane type went through memory there).
inline float dot_lanes(const float* __restrict a, const float* __restrict b, std::int64_t n) {
#ifdef __AVX512F__
  V16 p = {};
#else
  V8 lo = {}, hi = {};
#endif
  std::int64_t i = 0;
  alignas(64) float ta[kLanes] = {}, tb[kLanes] = {};
  for (; i < n; i += kLanes) {
    const float *pa = a + i, *pb = b + i;
    if (i + kLanes > n) {  // a partial last chunk, zero-padded
      for (int l = 0; i + l < n; ++l) {
        ta[l] = a[i + l];
        tb[l] = b[i + l];
      }
      pa = ta;
      pb = tb;
    }
#ifdef __AVX512F__
    p += load16(pa) * load16(pb);
#else
    lo += load_v<V8>(pa) * load_v<V8>(pb);
    hi += load_v<V8>(pa + 8) * load_v<V8>(pb + 8);
#endif
  }
#ifdef __AVX512F__
  return tree_sum(p);
#else
  return tree_sum(lo, hi);
#endif
}

inline float sum_squares_lanes(const float* __restrict a, std::int64_t n) {
  return dot_lanes(a, a, n);
}

// 16 floats from p, lanes at or past `n` zero.
inline V16 load16_upto(const float* p, std::int64_t n) {
  if (n >= kLanes) return load16(p);
  alignas(64) float t[kLanes] = {};
  for (std::int64_t l = 0; l < n; ++l) t[l] = p[l];
  return load16(t);
}

// tree_sum of four vectors at once, each result the same bytes as tree_sum(a_i): the levels of
// the tree are done on the four vectors side by side (lanes 0-7 of a_i land in one half of t, then
// quarters, pairs, singles).
inline V4 tree_sum4(V16 a0, V16 a1, V16 a2, V16 a3) {
  const V16 t01 =
      __builtin_shufflevector(a0, a1, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
      __builtin_shufflevector(a0, a1, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const V16 t23 =
      __builtin_shufflevector(a2, a3, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
      __builtin_shufflevector(a2, a3, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const V16 u =
      __builtin_shufflevector(t01, t23, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
      __builtin_shufflevector(t01, t23, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const V16 v =
      u + __builtin_shufflevector(u, u, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  const V16 w =
      v + __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
  return V4{w[0], w[4], w[8], w[12]};
}

// c + a·b rounded once, lane-wise: the same bytes on avx2 (two halves) and avx512.
inline V16 fma16(V16 a, V16 b, V16 c) {
#ifdef __AVX512F__
  return (V16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
  const auto lo = [](V16 v) {
    return (__m256)__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  };
  const auto hi = [](V16 v) {
    return (__m256)__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  };
  const V8 l = (V8)_mm256_fmadd_ps(lo(a), lo(b), lo(c));
  const V8 h = (V8)_mm256_fmadd_ps(hi(a), hi(b), hi(c));
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#endif
}

// exp(x) for the activations, branch-free so loops over it vectorise: x = n·ln2 + r with
// |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial (error < 2 ulp), times 2^n built in the
// exponent bits. Inputs are clamped to [-87, 88], where exp stays a normal finite float. One
// body for a float and for 8 or 16 lanes held in registers, so every lane runs the scalar's
// operations in its order and gives its bytes.
typedef std::int32_t V16i __attribute__((vector_size(64)));
typedef std::int32_t V8i __attribute__((vector_size(32)));
inline float as_t(float, float c) { return c; }
inline V16 as_t(V16, float c) { return splat16(c); }
inline V8 as_t(V8, float c) { return splat8(c); }
inline float exp_bits(std::int32_t e) { return __builtin_bit_cast(float, e); }
inline V16 exp_bits(V16i e) { return (V16)e; }
inline V8 exp_bits(V8i e) { return (V8)e; }
inline std::int32_t to_i32(float n) { return static_cast<std::int32_t>(n); }
inline V16i to_i32(V16 n) { return __builtin_convertvector(n, V16i); }
inline V8i to_i32(V8 n) { return __builtin_convertvector(n, V8i); }

template <typename T>
inline T exp_poly_of(T x) {
  const T lo = as_t(x, -87.0f), hi = as_t(x, 88.0f);
  x = x > lo ? x : lo;                   // max_f(x, -87)
  x = x < hi ? x : hi;                   // min_f(x, 88)
  const T magic = as_t(x, 12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const T n = (x * as_t(x, 1.44269504f) + magic) - magic;
  const T r = (x - n * as_t(x, 0.693145752f)) - n * as_t(x, 1.42860677e-6f);  // ln2 hi + lo
  T p = as_t(x, 1.0f / 720.0f);
  p = p * r + as_t(x, 1.0f / 120.0f);
  p = p * r + as_t(x, 1.0f / 24.0f);
  p = p * r + as_t(x, 1.0f / 6.0f);
  p = p * r + as_t(x, 0.5f);
  p = p * r + as_t(x, 1.0f);
  p = p * r + as_t(x, 1.0f);
  return p * exp_bits((to_i32(n) + 127) << 23);
}
inline float exp_poly(float x) { return exp_poly_of(x); }
inline V16 exp_poly16(V16 x) { return exp_poly_of(x); }

}  // namespace
}  // namespace recur::kernels::detail::vec
