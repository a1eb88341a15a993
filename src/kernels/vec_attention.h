// Internal to kernels/: the vector attention (the per-query form and the query tiles), included
// at the end of vec_impl.h, inside whose RECUR_VEC_NS copy it is compiled for each ISA. Every
// query row keeps one fixed order of operations, whatever the tile, chunk or thread it runs in.
#ifndef RECUR_VEC_NS
#error "include vec_impl.h, not vec_attention.h"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/vec_isa.h"

namespace recur::kernels::detail::RECUR_VEC_NS {

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

// Attention's q·k: lane l accumulates q[i]·k[i] over i ≡ l (mod 16) with fused multiply-adds,
// then tree_sum; a partial last chunk is zero-padded (adds exact zeros).
template <typename T>
inline V16 attn_chunk(const T* p, std::int64_t i, std::int64_t n) {
  if (i + kLanes <= n) return kv_load16(p + i);
  alignas(64) float t[kLanes] = {};
  for (std::int64_t l = 0; i + l < n; ++l) t[l] = kv_elem(p, i + l);
  return load16(t);
}
#ifndef __AVX512F__
// AVX2: the 16-lane accumulator as two 256-bit halves, tree_sum's levels with 256/128-bit adds
// (see attn_dot4 below for why).
inline float attn_hsum(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, _MM_SHUFFLE(1, 1, 1, 1))));
}
template <typename T>
inline float attn_dot(const float* q, const T* k, std::int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv_load8(k + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), kv_load8(k + i + 8), hi);
  }
  if (i < n) {
    alignas(32) float tq[kLanes] = {}, tk[kLanes] = {};
    for (std::int64_t l = 0; i + l < n; ++l) {
      tq[l] = q[i + l];
      tk[l] = kv_elem(k, i + l);
    }
    lo = _mm256_fmadd_ps(_mm256_load_ps(tq), _mm256_load_ps(tk), lo);
    hi = _mm256_fmadd_ps(_mm256_load_ps(tq + 8), _mm256_load_ps(tk + 8), hi);
  }
  return attn_hsum(lo, hi);
}
#else
template <typename T>
inline float attn_dot(const float* q, const T* k, std::int64_t n) {
  V16 p = {};
  for (std::int64_t i = 0; i < n; i += kLanes)
    p = fma16(attn_chunk(q, i, n), attn_chunk(k, i, n), p);
  return tree_sum(p);
}
#endif
// attn_dot of q with four keys (same bytes as four attn_dot calls), n a multiple of 16.
#ifndef __AVX512F__
// AVX2: each 16-lane accumulator as two 256-bit halves and tree_sum's levels written with 256-bit
// operations, the same adds with the same operands. (GCC 12 lowered the 64-byte vector form to
// scalar extracts and stack traffic here: attention was 59% of a qwen3-0.6b 512-token prefill.)
template <typename T>
inline V4 attn_dot4(const float* __restrict q, const T* const* k, std::int64_t n) {
  __m256 lo[4], hi[4];
  for (int c = 0; c < 4; ++c) lo[c] = hi[c] = _mm256_setzero_ps();
  for (std::int64_t i = 0; i < n; i += kLanes) {
    const __m256 ql = _mm256_loadu_ps(q + i), qh = _mm256_loadu_ps(q + i + 8);
    for (int c = 0; c < 4; ++c) {
      lo[c] = _mm256_fmadd_ps(ql, kv_load8(k[c] + i), lo[c]);
      hi[c] = _mm256_fmadd_ps(qh, kv_load8(k[c] + i + 8), hi[c]);
    }
  }
  // Lanes 0-7 + lanes 8-15, then per pair of keys [lanes 0-3 | ...] + [lanes 4-7 | ...], then
  // lanes (0, 1) + (2, 3), then lane 0 + lane 1: tree_sum's levels, two keys per vector.
  const auto pair = [](__m256 a, __m256 b) {
    const __m256 s4 =
        _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    const __m256 s2 = _mm256_add_ps(s4, _mm256_shuffle_ps(s4, s4, _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(s2, _mm256_shuffle_ps(s2, s2, _MM_SHUFFLE(1, 1, 1, 1)));
  };
  const __m256 r01 = pair(_mm256_add_ps(lo[0], hi[0]), _mm256_add_ps(lo[1], hi[1]));
  const __m256 r23 = pair(_mm256_add_ps(lo[2], hi[2]), _mm256_add_ps(lo[3], hi[3]));
  return V4{_mm256_cvtss_f32(r01), _mm_cvtss_f32(_mm256_extractf128_ps(r01, 1)),
            _mm256_cvtss_f32(r23), _mm_cvtss_f32(_mm256_extractf128_ps(r23, 1))};
}
#else
template <typename T>
inline V4 attn_dot4(const float* __restrict q, const T* const* k, std::int64_t n) {
  V16 p0 = {}, p1 = {}, p2 = {}, p3 = {};
  for (std::int64_t i = 0; i < n; i += kLanes) {
    const V16 qv = load16(q + i);
    p0 = fma16(qv, kv_load16(k[0] + i), p0);
    p1 = fma16(qv, kv_load16(k[1] + i), p1);
    p2 = fma16(qv, kv_load16(k[2] + i), p2);
    p3 = fma16(qv, kv_load16(k[3] + i), p3);
  }
  return tree_sum4(p0, p1, p2, p3);
}
#endif

// A KV row as f32: f32 rows are used in place, bf16 rows are widened into `buf`.
inline const float* kv_row_f32(const void* base, std::int64_t elem, std::int64_t n, DType dt,
                               float* __restrict buf) {
  if (dt == DType::kF32) return static_cast<const float*>(base) + elem;
  const std::uint16_t* p = static_cast<const std::uint16_t*>(base) + elem;
  for (std::int64_t d = 0; d < n; ++d) {
    const std::uint32_t u = static_cast<std::uint32_t>(p[d]) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    buf[d] = f;
  }
  return buf;
}

inline void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                            const AttentionShape& s, std::int64_t i, std::int64_t h) {
  const std::int64_t hd = s.head_dim;
  const std::int64_t qhs = s.q_head_stride != 0 ? s.q_head_stride : hd;
  const std::int64_t qts = s.q_token_stride != 0 ? s.q_token_stride : s.n_heads * qhs;
  const std::int64_t kvh = h / (s.n_heads / s.n_kv_heads);
  const std::int64_t n_keys = s.pos0 + i + 1;
  const std::int64_t kv_row = s.kv_token_step(), kv_head = kvh * s.kv_head_step();
  const float* qh = q + i * qts + h * qhs;
  alignas(64) float acc[kMaxHeadDim] = {};
  alignas(64) float buf[kMaxHeadDim];
  float scores[kAttentionBlock];
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  for (std::int64_t b0 = 0; b0 < n_keys; b0 += kAttentionBlock) {
    const std::int64_t b1 = min_i(b0 + kAttentionBlock, n_keys);
    float bm = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = b0; j < b1; ++j) {
      const float* kj = kv_row_f32(k_cache, j * kv_row + kv_head, hd, s.kv_dtype, buf);
      scores[j - b0] = dot_lanes(qh, kj, hd) * s.scale;
      bm = max_f(bm, scores[j - b0]);
    }
    const float m_new = max_f(m, bm);
    const float corr = std::exp(m - m_new);
    l *= corr;
    for (std::int64_t d = 0; d < hd; ++d) acc[d] *= corr;
    for (std::int64_t j = b0; j < b1; ++j) {
      const float p = std::exp(scores[j - b0] - m_new);
      l += p;
      const float* vj = kv_row_f32(v_cache, j * kv_row + kv_head, hd, s.kv_dtype, buf);
      for (std::int64_t d = 0; d < hd; ++d) acc[d] += p * vj[d];
    }
    m = m_new;
  }
  float* oh = out + (i * s.n_heads + h) * hd;
  const float inv_l = 1.0f / l;
  for (std::int64_t d = 0; d < hd; ++d) oh[d] = acc[d] * inv_l;
}

// A tile of query rows that share one kv head: the group's heads for queries i0 .. i0+n_i-1, row
// r = query (r / group), head kvh·group + r % group. Each key block's K/V rows are widened once
// for the tile, then every row runs attention_query's arithmetic over them, in its order: the
// scores, the block max, the correction, then the keys in order (only the keys the row may see).
inline constexpr std::int64_t kAttnTileRows = kAttentionTileRows;

struct AttnRow {
  const float* q = nullptr;
  std::int64_t n_keys = 0;
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  float* acc = nullptr;  // [head_dim]
};

// One row over keys b0 .. b0+n-1 (rows k[jj], v[jj]).
template <typename T>
inline void attention_row_block(AttnRow& row, const T* const* k, const T* const* v, std::int64_t n,
                                std::int64_t hd, float scale) {
  alignas(64) float p[kAttentionBlock];
  float bm = -std::numeric_limits<float>::infinity();
  std::int64_t js = 0;
  if (hd % kLanes == 0) {
    for (; js + 4 <= n; js += 4) {
      const V4 d4 = attn_dot4(row.q, k + js, hd);
      for (int c = 0; c < 4; ++c) p[js + c] = d4[c] * scale;
    }
  }
  for (; js < n; ++js) p[js] = attn_dot(row.q, k[js], hd) * scale;
  for (js = 0; js < n; ++js) bm = max_f(bm, p[js]);
  const float m_new = max_f(row.m, bm);
  const float corr = std::exp(row.m - m_new);
  float l = row.l * corr;
  for (js = 0; js < n; ++js) p[js] = exp_poly(p[js] - m_new);
  for (js = 0; js < n; ++js) l += p[js];
  row.l = l;
  row.m = m_new;
  // Four 16-lane column chunks at a time: independent add chains, each walking the keys in order.
  std::int64_t d = 0;
#ifndef __AVX512F__
  // AVX2: the same chains as 256-bit halves in registers (through fma16, GCC 12 moved every
  // 64-byte value through the stack; 2x slower attention).
  const __m256 cv = _mm256_set1_ps(corr);
  for (; d + 4 * kLanes <= hd; d += 4 * kLanes) {
    __m256 a[8];
    for (int t = 0; t < 8; ++t) a[t] = _mm256_mul_ps(_mm256_loadu_ps(row.acc + d + 8 * t), cv);
    for (std::int64_t jj = 0; jj < n; ++jj) {
      const T* vj = v[jj] + d;
      const __m256 pj = _mm256_set1_ps(p[jj]);
      for (int t = 0; t < 8; ++t) a[t] = _mm256_fmadd_ps(pj, kv_load8(vj + 8 * t), a[t]);
    }
    for (int t = 0; t < 8; ++t) _mm256_storeu_ps(row.acc + d + 8 * t, a[t]);
  }
#endif
  for (; d + 4 * kLanes <= hd; d += 4 * kLanes) {
    V16 a0 = load16(row.acc + d) * corr, a1 = load16(row.acc + d + kLanes) * corr;
    V16 a2 = load16(row.acc + d + 2 * kLanes) * corr, a3 = load16(row.acc + d + 3 * kLanes) * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) {
      const T* vj = v[jj] + d;
      const V16 pj = splat16(p[jj]);
      a0 = fma16(pj, kv_load16(vj), a0);
      a1 = fma16(pj, kv_load16(vj + kLanes), a1);
      a2 = fma16(pj, kv_load16(vj + 2 * kLanes), a2);
      a3 = fma16(pj, kv_load16(vj + 3 * kLanes), a3);
    }
    store16(row.acc + d, a0);
    store16(row.acc + d + kLanes, a1);
    store16(row.acc + d + 2 * kLanes, a2);
    store16(row.acc + d + 3 * kLanes, a3);
  }
  for (; d + kLanes <= hd; d += kLanes) {
#ifndef __AVX512F__
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(row.acc + d), cv);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(row.acc + d + 8), cv);
    for (std::int64_t jj = 0; jj < n; ++jj) {
      const __m256 pj = _mm256_set1_ps(p[jj]);
      a0 = _mm256_fmadd_ps(pj, kv_load8(v[jj] + d), a0);
      a1 = _mm256_fmadd_ps(pj, kv_load8(v[jj] + d + 8), a1);
    }
    _mm256_storeu_ps(row.acc + d, a0);
    _mm256_storeu_ps(row.acc + d + 8, a1);
#else
    V16 a = load16(row.acc + d) * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) a = fma16(splat16(p[jj]), kv_load16(v[jj] + d), a);
    store16(row.acc + d, a);
#endif
  }
  for (; d < hd; ++d) {
    float a = row.acc[d] * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) a = std::fma(p[jj], kv_elem(v[jj], d), a);
    row.acc[d] = a;
  }
}

}  // namespace recur::kernels::detail::RECUR_VEC_NS

#include "kernels/vec_attention_rows.h"

namespace recur::kernels::detail::RECUR_VEC_NS {

// Tiles of at most this many rows read bf16 K/V in place (attention_tile).
inline constexpr std::int64_t kAttnDirectRows = 4;

inline void attention_tile_finish(const AttnRow* rows, std::int64_t n_rows, float* out,
                                  const AttentionShape& s, std::int64_t i0, std::int64_t kvh) {
  const std::int64_t hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t i = i0 + r / group, h = kvh * group + r % group;
    float* oh = out + (i * s.n_heads + h) * hd;
    const float inv_l = 1.0f / rows[r].l;
    for (std::int64_t d = 0; d < hd; ++d) oh[d] = rows[r].acc[d] * inv_l;
  }
}

// The tile's rows over keys b0 .. b1-1: runs of up to kAttnGroupRows rows that see the same keys of
// the block (a query's heads; below the diagonal, several queries) share each K/V chunk they load.
template <typename T>
inline void attention_tile_block(AttnRow* rows, std::int64_t n_rows, const T* const* kr,
                                 const T* const* vr, std::int64_t b0, std::int64_t b1,
                                 std::int64_t hd, float scale, const KvAhead& ahead) {
  for (std::int64_t r = 0; r < n_rows;) {
    const std::int64_t n = min_i(b1, rows[r].n_keys) - b0;
    std::int64_t g = 1;
    while (g < kAttnGroupRows && r + g < n_rows && min_i(b1, rows[r + g].n_keys) - b0 == n) ++g;
    if (n > 0 && !attention_rows_block_any(rows + r, g, kr, vr, n, hd, scale, ahead)) {
      for (std::int64_t rr = r; rr < r + g; ++rr)
        attention_row_block(rows[rr], kr, vr, n, hd, scale);
    }
    r += g;
  }
}

inline void attention_tile(const float* q, const void* k_cache, const void* v_cache, float* out,
                           const AttentionShape& s, std::int64_t i0, std::int64_t n_i,
                           std::int64_t kvh) {
  const std::int64_t hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const std::int64_t qhs = s.q_head_stride != 0 ? s.q_head_stride : hd;
  const std::int64_t qts = s.q_token_stride != 0 ? s.q_token_stride : s.n_heads * qhs;
  const std::int64_t kv_row = s.kv_token_step(), kv_head = kvh * s.kv_head_step();
  const std::int64_t n_rows = n_i * group;
  AttnRow rows[kAttnTileRows];
  alignas(64) float acc[kAttnTileRows][kMaxHeadDim];
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t i = i0 + r / group, h = kvh * group + r % group;
    rows[r] = {.q = q + i * qts + h * qhs, .n_keys = s.pos0 + i + 1, .acc = acc[r]};
    for (std::int64_t d = 0; d < hd; ++d) acc[r][d] = 0.0f;
  }
  // Few rows (decode: one query's group of heads) read bf16 K/V straight from the cache, widened
  // in registers; more rows share one widened copy of each block. Same arithmetic either way.
  if (s.kv_dtype == DType::kBF16 && n_rows <= kAttnDirectRows) {
    const auto* kc = static_cast<const std::uint16_t*>(k_cache) + kv_head;
    const auto* vc = static_cast<const std::uint16_t*>(v_cache) + kv_head;
    const std::uint16_t* kr[kAttentionBlock];
    const std::uint16_t* vr[kAttentionBlock];
    const std::int64_t all_keys = rows[n_rows - 1].n_keys;
    for (std::int64_t b0 = 0; b0 < all_keys; b0 += kAttentionBlock) {
      const std::int64_t b1 = min_i(b0 + kAttentionBlock, all_keys);
      for (std::int64_t j = b0; j < b1; ++j) {
        kr[j - b0] = kc + j * kv_row;
        vr[j - b0] = vc + j * kv_row;
      }
      // The next block, if any (no pointer past the cache is formed for the last one).
      KvAhead ahead;
      if (b1 < all_keys) {
        ahead = {.k = kc + b1 * kv_row,
                 .v = vc + b1 * kv_row,
                 .n = min_i(b1 + kAttentionBlock, all_keys) - b1,
                 .stride = kv_row};
      }
      attention_tile_block(rows, n_rows, kr, vr, b0, b1, hd, s.scale, ahead);
    }
    return attention_tile_finish(rows, n_rows, out, s, i0, kvh);
  }
  // Widened K/V rows of one block (bf16 caches; f32 rows are used in place).
  alignas(64) float kbuf[kAttentionBlock * kMaxHeadDim];
  alignas(64) float vbuf[kAttentionBlock * kMaxHeadDim];
  const float* kr[kAttentionBlock];
  const float* vr[kAttentionBlock];
  const std::int64_t all_keys = rows[n_rows - 1].n_keys;
  for (std::int64_t b0 = 0; b0 < all_keys; b0 += kAttentionBlock) {
    const std::int64_t b1 = min_i(b0 + kAttentionBlock, all_keys);
    for (std::int64_t j = b0; j < b1; ++j) {
      const std::int64_t e = j * kv_row + kv_head;
      kr[j - b0] = kv_row_f32(k_cache, e, hd, s.kv_dtype, kbuf + (j - b0) * hd);
      vr[j - b0] = kv_row_f32(v_cache, e, hd, s.kv_dtype, vbuf + (j - b0) * hd);
    }
    attention_tile_block(rows, n_rows, kr, vr, b0, b1, hd, s.scale, KvAhead{});
  }
  attention_tile_finish(rows, n_rows, out, s, i0, kvh);
}

}  // namespace recur::kernels::detail::RECUR_VEC_NS
