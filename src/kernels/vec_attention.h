// Internal to kernels/: the vector attention (the per-query form and the query tiles), compiled
// per ISA (vec_math.h says how and why; the anonymous namespace gives each ISA file its own
// copy). Every query row keeps one fixed order of operations, whatever the tile, chunk or thread
// it runs in.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention_sinks.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/vec_attention_rows.h"
#include "kernels/vec_math.h"

namespace recur::kernels::detail::vec {
namespace {

// Attention's q·k: lane l accumulates q[i]·k[i] over i ≡ l (mod 16) with fused multiply-adds,
// then tree_sum; a partial last chunk is zero-padded (adds exact zeros).
#ifndef __AVX512F__
// AVX2: the accumulator as two 256-bit halves, summed by attn_hsum.
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
inline V16 attn_chunk(const T* p, std::int64_t i, std::int64_t n) {
  if (i + kLanes <= n) return kv_load16(p + i);
  alignas(64) float t[kLanes] = {};
  for (std::int64_t l = 0; i + l < n; ++l) t[l] = kv_elem(p, i + l);
  return load16(t);
}
template <typename T>
inline float attn_dot(const float* q, const T* k, std::int64_t n) {
  V16 p = {};
  for (std::int64_t i = 0; i < n; i += kLanes)
    p = fma16(attn_chunk(q, i, n), attn_chunk(k, i, n), p);
  return tree_sum(p);
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
  const float inv_l = 1.0f / sink_denominator(s, h, l, m);
  for (std::int64_t d = 0; d < hd; ++d) oh[d] = acc[d] * inv_l;
}

// One row over keys b0 .. b0+n-1 (rows k[jj], v[jj]): head sizes that are not whole 16-lane
// chunks, which attention_rows_block does not take. Out of line (rare; it would only grow
// attention_tile, the decode path).
template <typename T>
[[gnu::noinline]] void attention_row_block(AttnRow& row, const T* const* k, const T* const* v,
                                           std::int64_t n, std::int64_t hd, float scale) {
  alignas(64) float p[kAttentionBlock];
  float bm = -std::numeric_limits<float>::infinity();
  std::int64_t js = 0;
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

// Tiles of at most this many rows read bf16 K/V in place (attention_tile).
inline constexpr std::int64_t kAttnDirectRows = 4;

inline void attention_tile_finish(const AttnRow* rows, std::int64_t n_rows, float* out,
                                  const AttentionShape& s, std::int64_t i0, std::int64_t kvh) {
  const std::int64_t hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t i = i0 + r / group, h = kvh * group + r % group;
    float* oh = out + (i * s.n_heads + h) * hd;
    const float inv_l = 1.0f / sink_denominator(s, h, rows[r].l, rows[r].m);
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

// A tile of query rows that share one kv head: the group's heads for queries i0 .. i0+n_i-1, row
// r = query (r / group), head kvh·group + r % group. Each key block's K/V rows are widened once
// for the tile, then every row runs attention_query's arithmetic over them, in its order: the
// scores, the block max, the correction, then the keys in order (only the keys the row may see).
inline void attention_tile(const float* q, const void* k_cache, const void* v_cache, float* out,
                           const AttentionShape& s, std::int64_t i0, std::int64_t n_i,
                           std::int64_t kvh) {
  const std::int64_t hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const std::int64_t qhs = s.q_head_stride != 0 ? s.q_head_stride : hd;
  const std::int64_t qts = s.q_token_stride != 0 ? s.q_token_stride : s.n_heads * qhs;
  const std::int64_t kv_row = s.kv_token_step(), kv_head = kvh * s.kv_head_step();
  const std::int64_t n_rows = n_i * group;
  AttnRow rows[kAttentionTileRows];
  alignas(64) float acc[kAttentionTileRows][kMaxHeadDim];
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

}  // namespace
}  // namespace recur::kernels::detail::vec
