// Internal to kernels/: attention for up to four rows that see the same keys of one key block (a
// decode query's head group reading a bf16 cache in place, or a prefill tile's rows over the
// tile's widened f32 copy of the block), compiled per ISA (vec_math.h says how and why; the
// anonymous namespace gives each ISA file its own copy); vec_attention.h builds the tiles on it.
// Each K/V chunk is loaded (and widened) once for all the rows: widening per row made decode
// attention instruction-bound (8-10 GB/s), and prefill rows one at a time reloaded every block
// from L2 per row. Every row's arithmetic is attention_row_block's, in its order.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/vec_math.h"

namespace recur::kernels::detail::vec {
namespace {

// K/V elements read as f32: f32 rows as they are, bf16 rows widened in registers (exact, so a
// row's arithmetic is the same whichever way its K/V arrive).
inline float kv_elem(const float* p, std::int64_t d) { return p[d]; }
inline float kv_elem(const std::uint16_t* p, std::int64_t d) {
  const std::uint32_t u = static_cast<std::uint32_t>(p[d]) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline V16 kv_load16(const float* p) { return load16(p); }
inline __m256 kv_load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 kv_load8(const std::uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline V16 kv_load16(const std::uint16_t* p) {
#ifdef __AVX512F__
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return (V16)_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
#else
  const V8 l = (V8)kv_load8(p), h = (V8)kv_load8(p + 8);
  return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#endif
}
#ifndef __AVX512F__
// AVX2: a 16-lane accumulator as two 256-bit halves, tree_sum's levels with 256/128-bit adds
// (GCC 12 lowered the 64-byte vector form to scalar extracts and stack traffic: attention was 59%
// of a qwen3-0.6b 512-token prefill).
inline float attn_hsum(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, _MM_SHUFFLE(1, 1, 1, 1))));
}
#endif

// One query row of a tile: its q, the keys it may see, and its online-softmax state.
struct AttnRow {
  const float* q = nullptr;
  std::int64_t n_keys = 0;
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  float* acc = nullptr;  // [head_dim]
};

// Most rows one attention_rows_block call runs (AVX-512: 4 rows x 4 keys or columns fill 16 of
// the 32 registers with accumulators).
inline constexpr std::int64_t kAttnGroupRows = 4;

// K/V rows of the next block, requested into L2 while this block's q·k runs; this block's V rows
// into L1 for the p·V pass that follows.
struct KvAhead {
  const std::uint16_t* k = nullptr;  // the next block's first K row
  const std::uint16_t* v = nullptr;  // and V row
  std::int64_t n = 0;                // its keys
  std::int64_t stride = 0;           // elements between rows
};
// always_inline: GCC's pure-const pass finds a function whose only effect is prefetching
// side-effect free and deletes calls to it that were not inlined early (it did here).
[[gnu::always_inline]] inline void prefetch_row(const std::uint16_t* p, std::int64_t hd, int hint) {
  const char* b = reinterpret_cast<const char*>(p);
  for (std::int64_t off = 0; off < hd * 2; off += 64) {
    if (hint == 0) {
      _mm_prefetch(b + off, _MM_HINT_T0);
    } else {
      _mm_prefetch(b + off, _MM_HINT_T1);
    }
  }
}
// f32 rows are a tile's widened copy of the block, already in L1/L2: nothing to ask for.
[[gnu::always_inline]] inline void prefetch_key(const float* const*, std::int64_t, std::int64_t,
                                                const KvAhead&) {}
[[gnu::always_inline]] inline void prefetch_key(const std::uint16_t* const* v, std::int64_t c,
                                                std::int64_t hd, const KvAhead& ahead) {
  prefetch_row(v[c], hd, 0);
  if (c < ahead.n) {
    prefetch_row(ahead.k + c * ahead.stride, hd, 1);
    prefetch_row(ahead.v + c * ahead.stride, hd, 1);
  }
}

#ifdef __AVX512F__
struct Widened32 {
  V16 lo, hi;  // elements 0-15 and 16-31 of a 32-element bf16 chunk, as f32
};
// One 64-byte load and two word permutes that place element l in the upper half of lane l and
// zero the lower half: the same f32 values as kv_load16, half the instructions.
inline Widened32 kv_load32(const std::uint16_t* p) {
  const __m512i x = _mm512_loadu_si512(p);
  const __m512i lo_idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7,
                                          0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
  const __m512i hi_idx = _mm512_set_epi16(31, 0, 30, 0, 29, 0, 28, 0, 27, 0, 26, 0, 25, 0, 24, 0,
                                          23, 0, 22, 0, 21, 0, 20, 0, 19, 0, 18, 0, 17, 0, 16, 0);
  constexpr __mmask32 kUpperWords = 0xAAAAAAAAu;
  return {(V16)_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kUpperWords, lo_idx, x)),
          (V16)_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(kUpperWords, hi_idx, x))};
}
inline Widened32 kv_load32(const float* p) { return {load16(p), load16(p + kLanes)}; }

// q·k of G rows with NK keys: acc[r][c] gets attn_dot's fused multiply-adds, chunk by chunk.
template <int G, int NK, typename T>
inline void attn_dots_rows(const AttnRow* rows, const T* const* k, std::int64_t hd,
                           V16 (&acc)[G][NK]) {
  for (int r = 0; r < G; ++r) {
    for (int c = 0; c < NK; ++c) acc[r][c] = V16{};
  }
  std::int64_t i = 0;
  for (; i + 2 * kLanes <= hd; i += 2 * kLanes) {
    for (int c = 0; c < NK; ++c) {
      const Widened32 kc = kv_load32(k[c] + i);
      for (int r = 0; r < G; ++r) {
        acc[r][c] = fma16(load16(rows[r].q + i), kc.lo, acc[r][c]);
        acc[r][c] = fma16(load16(rows[r].q + i + kLanes), kc.hi, acc[r][c]);
      }
    }
  }
  if (i < hd) {  // hd % 32 == 16
    for (int c = 0; c < NK; ++c) {
      const V16 kc = kv_load16(k[c] + i);
      for (int r = 0; r < G; ++r) acc[r][c] = fma16(load16(rows[r].q + i), kc, acc[r][c]);
    }
  }
}

// Scaled scores p[r][j] of the block's n keys (four keys at a time through tree_sum4, then one).
template <int G, typename T>
inline void attn_scores_rows(const AttnRow* rows, const T* const* k, const T* const* v,
                             std::int64_t n, std::int64_t hd, float scale, const KvAhead& ahead,
                             float (*p)[kAttentionBlock]) {
  std::int64_t js = 0;
  for (; js + 4 <= n; js += 4) {
    for (std::int64_t c = js; c < js + 4; ++c) prefetch_key(v, c, hd, ahead);
    V16 acc[G][4];
    attn_dots_rows<G, 4, T>(rows, k + js, hd, acc);
    for (int r = 0; r < G; ++r) {
      const V4 d4 = tree_sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      for (int c = 0; c < 4; ++c) p[r][js + c] = d4[c] * scale;
    }
  }
  for (; js < n; ++js) {
    prefetch_key(v, js, hd, ahead);
    V16 acc[G][1];
    attn_dots_rows<G, 1, T>(rows, k + js, hd, acc);
    for (int r = 0; r < G; ++r) p[r][js] = tree_sum(acc[r][0]) * scale;
  }
}

// p·V for G rows over NC 16-column chunks at column d: each column's chain is
// attention_row_block's (acc·corr, then one fused multiply-add per key in key order).
template <int G, int NC, typename T>
inline void attn_pv_rows(AttnRow* rows, const float (*p)[kAttentionBlock], const float* corr,
                         const T* const* v, std::int64_t n, std::int64_t d) {
  V16 a[G][NC];
  for (int r = 0; r < G; ++r) {
    for (int t = 0; t < NC; ++t) a[r][t] = load16(rows[r].acc + d + t * kLanes) * corr[r];
  }
  for (std::int64_t jj = 0; jj < n; ++jj) {
    V16 vc[NC];
    if constexpr (NC % 2 == 0) {
      for (int t = 0; t < NC; t += 2) {
        const Widened32 w = kv_load32(v[jj] + d + t * kLanes);
        vc[t] = w.lo;
        vc[t + 1] = w.hi;
      }
    } else {
      for (int t = 0; t < NC; ++t) vc[t] = kv_load16(v[jj] + d + t * kLanes);
    }
    for (int r = 0; r < G; ++r) {
      const V16 pj = splat16(p[r][jj]);
      for (int t = 0; t < NC; ++t) a[r][t] = fma16(pj, vc[t], a[r][t]);
    }
  }
  for (int r = 0; r < G; ++r) {
    for (int t = 0; t < NC; ++t) store16(rows[r].acc + d + t * kLanes, a[r][t]);
  }
}

// All columns: 64 at a time (G x 4 accumulators fit the 32 registers), then 32, then 16.
template <int G, typename T>
inline void attn_pv_all(AttnRow* rows, const float (*p)[kAttentionBlock], const float* corr,
                        const T* const* v, std::int64_t n, std::int64_t hd) {
  std::int64_t d = 0;
  for (; d + 4 * kLanes <= hd; d += 4 * kLanes) attn_pv_rows<G, 4, T>(rows, p, corr, v, n, d);
  for (; d + 2 * kLanes <= hd; d += 2 * kLanes) attn_pv_rows<G, 2, T>(rows, p, corr, v, n, d);
  if (d < hd) attn_pv_rows<G, 1, T>(rows, p, corr, v, n, d);
}
#else
// AVX2 (16 registers): the same chains as 256-bit halves; fewer keys and columns per pass.
template <int G, int NK, typename T>
inline void attn_scores_keys(const AttnRow* rows, const T* const* k, std::int64_t hd, float scale,
                             float (*p)[kAttentionBlock], std::int64_t js) {
  __m256 lo[G][NK], hi[G][NK];
  for (int r = 0; r < G; ++r) {
    for (int c = 0; c < NK; ++c) lo[r][c] = hi[r][c] = _mm256_setzero_ps();
  }
  for (std::int64_t i = 0; i < hd; i += kLanes) {
    for (int c = 0; c < NK; ++c) {
      const __m256 kl = kv_load8(k[js + c] + i), kh = kv_load8(k[js + c] + i + 8);
      for (int r = 0; r < G; ++r) {
        lo[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(rows[r].q + i), kl, lo[r][c]);
        hi[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(rows[r].q + i + 8), kh, hi[r][c]);
      }
    }
  }
  for (int r = 0; r < G; ++r) {
    for (int c = 0; c < NK; ++c) p[r][js + c] = attn_hsum(lo[r][c], hi[r][c]) * scale;
  }
}

template <int G, typename T>
inline void attn_scores_rows(const AttnRow* rows, const T* const* k, const T* const* v,
                             std::int64_t n, std::int64_t hd, float scale, const KvAhead& ahead,
                             float (*p)[kAttentionBlock]) {
  constexpr int kKeys = G == 1 ? 4 : G == 2 ? 2 : 1;  // 2·G·kKeys <= 8 accumulators
  std::int64_t js = 0;
  for (; js + kKeys <= n; js += kKeys) {
    for (std::int64_t c = js; c < js + kKeys; ++c) prefetch_key(v, c, hd, ahead);
    attn_scores_keys<G, kKeys, T>(rows, k, hd, scale, p, js);
  }
  for (; js < n; ++js) {
    prefetch_key(v, js, hd, ahead);
    attn_scores_keys<G, 1, T>(rows, k, hd, scale, p, js);
  }
}

template <int G, int NC, typename T>
inline void attn_pv_rows(AttnRow* rows, const float (*p)[kAttentionBlock], const float* corr,
                         const T* const* v, std::int64_t n, std::int64_t d) {
  __m256 a[G][NC];
  for (int r = 0; r < G; ++r) {
    const __m256 cv = _mm256_set1_ps(corr[r]);
    for (int t = 0; t < NC; ++t)
      a[r][t] = _mm256_mul_ps(_mm256_loadu_ps(rows[r].acc + d + 8 * t), cv);
  }
  for (std::int64_t jj = 0; jj < n; ++jj) {
    __m256 vc[NC];
    for (int t = 0; t < NC; ++t) vc[t] = kv_load8(v[jj] + d + 8 * t);
    for (int r = 0; r < G; ++r) {
      const __m256 pj = _mm256_set1_ps(p[r][jj]);
      for (int t = 0; t < NC; ++t) a[r][t] = _mm256_fmadd_ps(pj, vc[t], a[r][t]);
    }
  }
  for (int r = 0; r < G; ++r) {
    for (int t = 0; t < NC; ++t) _mm256_storeu_ps(rows[r].acc + d + 8 * t, a[r][t]);
  }
}

template <int G, typename T>
inline void attn_pv_all(AttnRow* rows, const float (*p)[kAttentionBlock], const float* corr,
                        const T* const* v, std::int64_t n, std::int64_t hd) {
  constexpr int kChunks = G == 1 ? 8 : G == 2 ? 4 : 2;  // G·kChunks <= 8 accumulators
  std::int64_t d = 0;
  for (; d + 8 * kChunks <= hd; d += 8 * kChunks)
    attn_pv_rows<G, kChunks, T>(rows, p, corr, v, n, d);
  for (; d < hd; d += 2 * 8) attn_pv_rows<G, 2, T>(rows, p, corr, v, n, d);
}
#endif

// hd a multiple of 16. Kept out of line: inlined into attention_tile (all four group sizes), GCC
// 12 spilled the accumulators and decode attention ran 1.4x slower.
template <int G, typename T>
[[gnu::noinline]] void attention_rows_block(AttnRow* rows, const T* const* k, const T* const* v,
                                            std::int64_t n, std::int64_t hd, float scale,
                                            const KvAhead& ahead) {
  alignas(64) float p[G][kAttentionBlock];
  attn_scores_rows<G, T>(rows, k, v, n, hd, scale, ahead, p);
  // The online softmax a register of scores at a time (the maximum is exact in any order; the
  // exponentials are exp_poly's lane by lane), and the rows' sums side by side, each adding its
  // keys in order: written per score in scalar code, this was a third of a block's time, its
  // sum one dependent chain of adds per row.
  using V = VN;
  constexpr std::int64_t kW = sizeof(V) / sizeof(float);
  float corr[G], l[G];
  for (int r = 0; r < G; ++r) {
    V vm = as_t(V{}, -std::numeric_limits<float>::infinity());
    std::int64_t js = 0;
    for (; js + kW <= n; js += kW) {
      const V x = load_v<V>(p[r] + js);
      vm = x > vm ? x : vm;
    }
    float bm = -std::numeric_limits<float>::infinity();
    for (std::int64_t lane = 0; lane < kW; ++lane) bm = max_f(bm, vm[lane]);
    for (; js < n; ++js) bm = max_f(bm, p[r][js]);
    const float m_new = max_f(rows[r].m, bm);
    corr[r] = std::exp(rows[r].m - m_new);
    l[r] = rows[r].l * corr[r];
    const V shift = as_t(V{}, m_new);
    for (js = 0; js + kW <= n; js += kW) {
      store_v(p[r] + js, exp_poly_of(load_v<V>(p[r] + js) - shift));
    }
    for (; js < n; ++js) p[r][js] = exp_poly(p[r][js] - m_new);
    rows[r].m = m_new;
  }
  for (std::int64_t js = 0; js < n; ++js) {
    for (int r = 0; r < G; ++r) l[r] += p[r][js];
  }
  for (int r = 0; r < G; ++r) rows[r].l = l[r];
  attn_pv_all<G, T>(rows, p, corr, v, n, hd);
}

// Up to kAttnGroupRows rows that see the same n keys of the block, K/V bf16 rows in place or a
// tile's f32 copies; false when the shape is not covered (hd not a multiple of 16).
template <typename T>
inline bool attention_rows_block_any(AttnRow* rows, std::int64_t g, const T* const* k,
                                     const T* const* v, std::int64_t n, std::int64_t hd,
                                     float scale, const KvAhead& ahead) {
  using Block = void (*)(AttnRow*, const T* const*, const T* const*, std::int64_t, std::int64_t,
                         float, const KvAhead&);
  static constexpr Block kBlocks[] = {attention_rows_block<1, T>, attention_rows_block<2, T>,
                                      attention_rows_block<3, T>, attention_rows_block<4, T>};
  static_assert(std::size(kBlocks) == kAttnGroupRows);
  if (hd % kLanes != 0 || g < 1 || g > kAttnGroupRows) return false;
  kBlocks[g - 1](rows, k, v, n, hd, scale, ahead);
  return true;
}

}  // namespace
}  // namespace recur::kernels::detail::vec
