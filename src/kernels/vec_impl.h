// Internal to kernels/: the vector forms of attention, the recurrences and the norms, written as
// plain loops the compiler vectorises. vec_avx2.cc and vec_avx512.cc include this file with their
// ISA flags (and -ffp-contract=off), so both compile the same arithmetic in the same order:
// - elementwise loops (over head_dim, Dv, d_state) keep the reference's exact order;
// - reductions use dot_lanes(): 16 running partial sums then a fixed pairwise tree, an order that
//   depends only on the length, never on batch, chunking or threads.
// The including file defines RECUR_VEC_NS (avx2 / avx512) so each ISA's copies are distinct
// symbols: an inline function shared under one name could be resolved by the linker to the copy
// built for the wider ISA. For the same reason no std:: algorithm templates are used here.
#ifndef RECUR_VEC_NS
#error "define RECUR_VEC_NS before including vec_impl.h"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/reference.h"
#include "kernels/vec_isa.h"

namespace recur::kernels::detail::RECUR_VEC_NS {

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

// The fixed pairwise tree: lane l += lane l + w for w = 8, 4, 2, 1; lane 0 is the sum.
inline float tree_sum(V16 p) {
  const V8 s8 = __builtin_shufflevector(p, p, 0, 1, 2, 3, 4, 5, 6, 7) +
                __builtin_shufflevector(p, p, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4 s4 =
      __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const V2 s2 = __builtin_shufflevector(s4, s4, 0, 1) + __builtin_shufflevector(s4, s4, 2, 3);
  return s2[0] + s2[1];
}

// Lane l sums a[i]·b[i] over i ≡ l (mod 16) in increasing i, then tree_sum. A partial last chunk
// adds zero products to the lanes past n, which leaves them unchanged (a lane is never −0).
inline float dot_lanes(const float* __restrict a, const float* __restrict b, std::int64_t n) {
  V16 p = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) p += load16(a + i) * load16(b + i);
  if (i < n) {
    alignas(64) float ta[kLanes] = {}, tb[kLanes] = {};
    for (int l = 0; i + l < n; ++l) {
      ta[l] = a[i + l];
      tb[l] = b[i + l];
    }
    p += load16(ta) * load16(tb);
  }
  return tree_sum(p);
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

// Attention's q·k: lane l accumulates q[i]·k[i] over i ≡ l (mod 16) with fused multiply-adds,
// then tree_sum; a partial last chunk is zero-padded (adds exact zeros).
inline V16 attn_chunk(const float* p, std::int64_t i, std::int64_t n) {
  if (i + kLanes <= n) return load16(p + i);
  alignas(64) float t[kLanes] = {};
  for (std::int64_t l = 0; i + l < n; ++l) t[l] = p[i + l];
  return load16(t);
}
inline float attn_dot(const float* q, const float* k, std::int64_t n) {
  V16 p = {};
  for (std::int64_t i = 0; i < n; i += kLanes)
    p = fma16(attn_chunk(q, i, n), attn_chunk(k, i, n), p);
  return tree_sum(p);
}
// attn_dot of q with four keys (same bytes as four attn_dot calls), n a multiple of 16.
inline V4 attn_dot4(const float* __restrict q, const float* const* k, std::int64_t n) {
  V16 p0 = {}, p1 = {}, p2 = {}, p3 = {};
  for (std::int64_t i = 0; i < n; i += kLanes) {
    const V16 qv = load16(q + i);
    p0 = fma16(qv, load16(k[0] + i), p0);
    p1 = fma16(qv, load16(k[1] + i), p1);
    p2 = fma16(qv, load16(k[2] + i), p2);
    p3 = fma16(qv, load16(k[3] + i), p3);
  }
  return tree_sum4(p0, p1, p2, p3);
}

inline float sum_squares_lanes(const float* __restrict a, std::int64_t n) {
  return dot_lanes(a, a, n);
}

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
  const std::int64_t kv_row = s.n_kv_heads * hd;
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
      const float* kj = kv_row_f32(k_cache, j * kv_row + kvh * hd, hd, s.kv_dtype, buf);
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
      const float* vj = kv_row_f32(v_cache, j * kv_row + kvh * hd, hd, s.kv_dtype, buf);
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
inline float exp_poly(float x);  // with the activations below

struct AttnRow {
  const float* q = nullptr;
  std::int64_t n_keys = 0;
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  float* acc = nullptr;  // [head_dim]
};

// One row over keys b0 .. b0+n-1 (rows k[jj], v[jj]).
inline void attention_row_block(AttnRow& row, const float* const* k, const float* const* v,
                                std::int64_t n, std::int64_t hd, float scale) {
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
  for (; d + 4 * kLanes <= hd; d += 4 * kLanes) {
    V16 a0 = load16(row.acc + d) * corr, a1 = load16(row.acc + d + kLanes) * corr;
    V16 a2 = load16(row.acc + d + 2 * kLanes) * corr, a3 = load16(row.acc + d + 3 * kLanes) * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) {
      const float* vj = v[jj] + d;
      const V16 pj = splat16(p[jj]);
      a0 = fma16(pj, load16(vj), a0);
      a1 = fma16(pj, load16(vj + kLanes), a1);
      a2 = fma16(pj, load16(vj + 2 * kLanes), a2);
      a3 = fma16(pj, load16(vj + 3 * kLanes), a3);
    }
    store16(row.acc + d, a0);
    store16(row.acc + d + kLanes, a1);
    store16(row.acc + d + 2 * kLanes, a2);
    store16(row.acc + d + 3 * kLanes, a3);
  }
  for (; d + kLanes <= hd; d += kLanes) {
    V16 a = load16(row.acc + d) * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) a = fma16(splat16(p[jj]), load16(v[jj] + d), a);
    store16(row.acc + d, a);
  }
  for (; d < hd; ++d) {
    float a = row.acc[d] * corr;
    for (std::int64_t jj = 0; jj < n; ++jj) a = std::fma(p[jj], v[jj][d], a);
    row.acc[d] = a;
  }
}

inline void attention_tile(const float* q, const void* k_cache, const void* v_cache, float* out,
                           const AttentionShape& s, std::int64_t i0, std::int64_t n_i,
                           std::int64_t kvh) {
  const std::int64_t hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const std::int64_t qhs = s.q_head_stride != 0 ? s.q_head_stride : hd;
  const std::int64_t qts = s.q_token_stride != 0 ? s.q_token_stride : s.n_heads * qhs;
  const std::int64_t kv_row = s.n_kv_heads * hd, n_rows = n_i * group;
  AttnRow rows[kAttnTileRows];
  alignas(64) float acc[kAttnTileRows][kMaxHeadDim];
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t i = i0 + r / group, h = kvh * group + r % group;
    rows[r] = {.q = q + i * qts + h * qhs, .n_keys = s.pos0 + i + 1, .acc = acc[r]};
    for (std::int64_t d = 0; d < hd; ++d) acc[r][d] = 0.0f;
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
      const std::int64_t e = j * kv_row + kvh * hd;
      kr[j - b0] = kv_row_f32(k_cache, e, hd, s.kv_dtype, kbuf + (j - b0) * hd);
      vr[j - b0] = kv_row_f32(v_cache, e, hd, s.kv_dtype, vbuf + (j - b0) * hd);
    }
    for (std::int64_t r = 0; r < n_rows; ++r) {
      const std::int64_t n = min_i(b1, rows[r].n_keys) - b0;
      if (n > 0) attention_row_block(rows[r], kr, vr, n, hd, s.scale);
    }
  }
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t i = i0 + r / group, h = kvh * group + r % group;
    float* oh = out + (i * s.n_heads + h) * hd;
    const float inv_l = 1.0f / rows[r].l;
    for (std::int64_t d = 0; d < hd; ++d) oh[d] = acc[r][d] * inv_l;
  }
}

// Same loops as ref::gated_delta_head; the inner loops run over Dv, so vectorising them keeps
// the reference's order exactly.
inline void gated_delta_head(const GatedDeltaInputs& in, float* __restrict s, float* out,
                             const GatedDeltaShape& shape, std::int64_t j) {
  const std::int64_t dk = shape.k_dim, dv = shape.v_dim;
  const std::int64_t hk = j / (shape.n_v_heads / shape.n_k_heads);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* q = in.q + t * shape.qkv_stride + hk * dk;
    const float* k = in.k + t * shape.qkv_stride + hk * dk;
    const float* v = in.v + t * shape.qkv_stride + j * dv;
    const float alpha = std::exp(in.g[t * shape.n_v_heads + j]);
    const float beta = in.beta[t * shape.n_v_heads + j];
    alignas(64) float kv[kMaxHeadDim] = {};
    for (std::int64_t a = 0; a < dk; ++a) {
      float* __restrict sa = s + a * dv;
      const float ka = k[a];
      for (std::int64_t b = 0; b < dv; ++b) {
        sa[b] *= alpha;
        kv[b] += sa[b] * ka;
      }
    }
    alignas(64) float u[kMaxHeadDim];
    for (std::int64_t b = 0; b < dv; ++b) u[b] = (v[b] - kv[b]) * beta;
    alignas(64) float o[kMaxHeadDim] = {};
    for (std::int64_t a = 0; a < dk; ++a) {
      float* __restrict sa = s + a * dv;
      const float ka = k[a], qa = q[a];
      for (std::int64_t b = 0; b < dv; ++b) {
        sa[b] += ka * u[b];
        o[b] += sa[b] * qa;
      }
    }
    float* dst = out + (t * shape.n_v_heads + j) * dv;
    for (std::int64_t b = 0; b < dv; ++b) dst[b] = o[b];
  }
}

// Columns b of S evolve independently (u[b] and o[b] read column b only), so a prefill walks the
// state in blocks of kDeltaCols columns, copied into a contiguous buffer that stays in L1 for all
// the call's tokens (in the state its rows are 4·Dv bytes apart and would crowd a few cache sets).
// Per column the arithmetic and its order are gated_delta_head's: each 16-column vector carries
// its own sums over a, and NV of them run side by side so the add chains overlap. Lanes past Dv
// hold zeros and are never written back.
inline constexpr std::int64_t kDeltaCols = kGatedDeltaCols;

// 16 floats from p, lanes at or past `n` zero.
inline V16 load16_upto(const float* p, std::int64_t n) {
  if (n >= kLanes) return load16(p);
  alignas(64) float t[kLanes] = {};
  for (std::int64_t l = 0; l < n; ++l) t[l] = p[l];
  return load16(t);
}

template <int NV>
void gated_delta_cols_n(const GatedDeltaInputs& in, float* __restrict s, float* out,
                        const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) {
  const std::int64_t dk = shape.k_dim, dv = shape.v_dim;
  const std::int64_t hk = j / (shape.n_v_heads / shape.n_k_heads);
  V16 blk[kMaxHeadDim * NV];  // [Dk][NV] vectors of 16 columns
  for (std::int64_t a = 0; a < dk; ++a)
    for (int c = 0; c < NV; ++c)
      blk[a * NV + c] = load16_upto(s + a * dv + b0 + c * kLanes, dv - b0 - c * kLanes);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* q = in.q + t * shape.qkv_stride + hk * dk;
    const float* k = in.k + t * shape.qkv_stride + hk * dk;
    const float* v = in.v + t * shape.qkv_stride + j * dv + b0;
    const float alpha = std::exp(in.g[t * shape.n_v_heads + j]);
    const float beta = in.beta[t * shape.n_v_heads + j];
    V16 kv[NV] = {};
    for (std::int64_t a = 0; a < dk; ++a) {
      const float ka = k[a];
      for (int c = 0; c < NV; ++c) {
        const V16 r = blk[a * NV + c] * alpha;
        blk[a * NV + c] = r;
        kv[c] += r * ka;
      }
    }
    V16 u[NV], o[NV] = {};
    for (int c = 0; c < NV; ++c)
      u[c] = (load16_upto(v + c * kLanes, dv - b0 - c * kLanes) - kv[c]) * beta;
    for (std::int64_t a = 0; a < dk; ++a) {
      const float ka = k[a], qa = q[a];
      for (int c = 0; c < NV; ++c) {
        const V16 r = blk[a * NV + c] + ka * u[c];
        blk[a * NV + c] = r;
        o[c] += r * qa;
      }
    }
    float* dst = out + (t * shape.n_v_heads + j) * dv + b0;
    for (int c = 0; c < NV; ++c)
      for (std::int64_t l = 0; l < kLanes && b0 + c * kLanes + l < dv; ++l)
        dst[c * kLanes + l] = o[c][l];
  }
  for (std::int64_t a = 0; a < dk; ++a)
    for (int c = 0; c < NV; ++c)
      for (std::int64_t l = 0; l < kLanes && b0 + c * kLanes + l < dv; ++l)
        s[a * dv + b0 + c * kLanes + l] = blk[a * NV + c][l];
}

inline void gated_delta_cols(const GatedDeltaInputs& in, float* __restrict s, float* out,
                             const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) {
  static_assert(kDeltaCols == 4 * kLanes);
  switch ((min_i(kDeltaCols, shape.v_dim - b0) + kLanes - 1) / kLanes) {
    case 1:
      return gated_delta_cols_n<1>(in, s, out, shape, j, b0);
    case 2:
      return gated_delta_cols_n<2>(in, s, out, shape, j, b0);
    case 3:
      return gated_delta_cols_n<3>(in, s, out, shape, j, b0);
    default:
      return gated_delta_cols_n<4>(in, s, out, shape, j, b0);
  }
}

// Rows p of a head's state evolve independently (dt and dA are per head, x[p] per row), so each
// row runs through a block of kMambaTokens tokens while it stays in registers (d_state a multiple
// of 16, up to 16·kMambaMaxVecs) or in L1, and B / C of the block are reused by every row. Per row
// and token the arithmetic is the reference's, in its order (the dot as dot_lanes).
inline constexpr std::int64_t kMambaTokens = 16;
inline constexpr int kMambaMaxVecs = 8;

struct MambaBlock {
  std::int64_t h = 0, g = 0, t0 = 0, nt = 0;
  float dt[kMambaTokens], da[kMambaTokens];
};

template <int NV>
void mamba2_rows_reg(const Mamba2Inputs& in, float* __restrict s, float* y,
                     const Mamba2Shape& shape, const MambaBlock& blk) {
  const std::int64_t p_dim = shape.head_dim, n_dim = shape.d_state;
  for (std::int64_t p = 0; p < p_dim; ++p) {
    float* sp = s + p * n_dim;
    V16 st[NV];
    for (int c = 0; c < NV; ++c) st[c] = load16(sp + c * kLanes);
    for (std::int64_t tt = 0; tt < blk.nt; ++tt) {
      const std::int64_t t = blk.t0 + tt;
      const float xp = in.x[t * shape.x_stride + blk.h * p_dim + p];
      const float* bv = in.b + t * shape.x_stride + blk.g * n_dim;
      const float* cv = in.c + t * shape.x_stride + blk.g * n_dim;
      const float dtx = blk.dt[tt] * xp, dat = blk.da[tt];
      V16 acc = {};
      for (int c = 0; c < NV; ++c) {
        st[c] = dat * st[c] + dtx * load16(bv + c * kLanes);
        acc += st[c] * load16(cv + c * kLanes);
      }
      y[(t * shape.n_heads + blk.h) * p_dim + p] = tree_sum(acc) + in.d[blk.h] * xp;
    }
    for (int c = 0; c < NV; ++c) store16(sp + c * kLanes, st[c]);
  }
}

inline void mamba2_rows_mem(const Mamba2Inputs& in, float* __restrict s, float* y,
                            const Mamba2Shape& shape, const MambaBlock& blk) {
  const std::int64_t p_dim = shape.head_dim, n_dim = shape.d_state;
  for (std::int64_t p = 0; p < p_dim; ++p) {
    float* __restrict sp = s + p * n_dim;
    for (std::int64_t tt = 0; tt < blk.nt; ++tt) {
      const std::int64_t t = blk.t0 + tt;
      const float xp = in.x[t * shape.x_stride + blk.h * p_dim + p];
      const float* __restrict bv = in.b + t * shape.x_stride + blk.g * n_dim;
      const float* __restrict cv = in.c + t * shape.x_stride + blk.g * n_dim;
      const float dtx = blk.dt[tt] * xp, dat = blk.da[tt];
      for (std::int64_t n = 0; n < n_dim; ++n) sp[n] = dat * sp[n] + dtx * bv[n];
      y[(t * shape.n_heads + blk.h) * p_dim + p] = dot_lanes(sp, cv, n_dim) + in.d[blk.h] * xp;
    }
  }
}

inline void mamba2_head(const Mamba2Inputs& in, float* __restrict s, float* y,
                        const Mamba2Shape& shape, std::int64_t h) {
  const std::int64_t n_dim = shape.d_state;
  const float a = -std::exp(in.a_log[h]);
  MambaBlock blk{.h = h, .g = h / (shape.n_heads / shape.n_groups)};
  const std::int64_t nv = n_dim % kLanes == 0 ? n_dim / kLanes : 0;
  for (blk.t0 = 0; blk.t0 < shape.n_tokens; blk.t0 += kMambaTokens) {
    blk.nt = min_i(kMambaTokens, shape.n_tokens - blk.t0);
    for (std::int64_t tt = 0; tt < blk.nt; ++tt) {
      const float d = ref::softplus(in.dt_raw[(blk.t0 + tt) * shape.dt_stride + h] + in.dt_bias[h]);
      blk.dt[tt] = min_f(max_f(d, shape.dt_min), shape.dt_max);
      blk.da[tt] = std::exp(blk.dt[tt] * a);
    }
    switch (nv) {
      case 4:
        mamba2_rows_reg<4>(in, s, y, shape, blk);
        break;
      case 8:
        mamba2_rows_reg<8>(in, s, y, shape, blk);
        break;
      default:
        mamba2_rows_mem(in, s, y, shape, blk);
        break;
    }
  }
}

inline void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps,
                     NormWeight kind) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.width;
  const float one = kind == NormWeight::kZeroCentred ? 1.0f : 0.0f;
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    const float* xr = x + r * xs;
    float* yr = y + r * ys;
    const float inv =
        1.0f /
        std::sqrt(sum_squares_lanes(xr, shape.width) / static_cast<float>(shape.width) + eps);
    for (std::int64_t i = 0; i < shape.width; ++i) yr[i] = (xr[i] * inv) * (one + w[i]);
  }
}

// exp(x) for the activations, branch-free so loops over it vectorise: x = n·ln2 + r with
// |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial (error < 2 ulp), times 2^n built in the
// exponent bits. Inputs are clamped to [-87, 88], where exp stays a normal finite float.
inline float exp_poly(float x) {
  x = min_f(max_f(x, -87.0f), 88.0f);
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504f + kMagic) - kMagic;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln2 split hi + lo
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  return p * __builtin_bit_cast(float, bits);
}

inline void silu(float* __restrict x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
}
inline void sigmoid(float* __restrict x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + exp_poly(-x[i]));
}
inline void swiglu(const float* __restrict gate, const float* __restrict up, float* __restrict out,
                   std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + exp_poly(-gate[i])) * up[i];
}
inline void mul_sigmoid(float* __restrict x, const float* __restrict gate, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + exp_poly(-gate[i]));
}

// Norm-then-gate (GDN output norm): the reference's order with the vector silu.
inline void rms_norm_gated(const float* x, const float* z, const float* w, float* y,
                           const RowsShape& shape, float eps) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.width;
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    const float* xr = x + r * xs;
    const float* zr = z + r * xs;
    float* yr = y + r * ys;
    const float inv =
        1.0f /
        std::sqrt(sum_squares_lanes(xr, shape.width) / static_cast<float>(shape.width) + eps);
    for (std::int64_t i = 0; i < shape.width; ++i)
      yr[i] = ((xr[i] * inv) * w[i]) * (zr[i] / (1.0f + exp_poly(-zr[i])));
  }
}

// Gate-then-norm (Mamba2 mixer norm), per group; the gated values go through a stack buffer of
// one group (at most kMaxGroup), so the sum of squares and the scaling see the same h.
inline constexpr std::int64_t kMaxGroup = kMaxGateGroup;
inline void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                                const RowsShape& shape, std::int64_t group_size, float eps) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.width;
  alignas(64) float h[kMaxGroup];
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    for (std::int64_t g0 = 0; g0 < shape.width; g0 += group_size) {
      const float* __restrict xr = x + r * xs + g0;
      const float* __restrict zr = z + r * xs + g0;
      for (std::int64_t i = 0; i < group_size; ++i)
        h[i] = xr[i] * (zr[i] / (1.0f + exp_poly(-zr[i])));
      const float inv =
          1.0f / std::sqrt(sum_squares_lanes(h, group_size) / static_cast<float>(group_size) + eps);
      float* yr = y + r * ys + g0;
      for (std::int64_t i = 0; i < group_size; ++i) yr[i] = (h[i] * inv) * w[g0 + i];
    }
  }
}

// Causal depthwise conv1d, token by token over blocks of kConvBlock channels: the block's input is
// copied before its output is written and the state rows are shifted per block, so y may alias x.
// Per channel the sum runs over j = 0..K-1 then adds the bias, as in the reference.
inline constexpr std::int64_t kConvBlock = 64;
inline void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                          const Conv1dShape& shape) {
  const std::int64_t ch = shape.channels, kk = shape.kernel;
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : ch;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : ch;
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    for (std::int64_t c0 = 0; c0 < ch; c0 += kConvBlock) {
      const std::int64_t nc = min_i(kConvBlock, ch - c0);
      alignas(64) float in[kConvBlock];
      alignas(64) float acc[kConvBlock] = {};
      for (std::int64_t c = 0; c < nc; ++c) in[c] = x[t * xs + c0 + c];
      for (std::int64_t j = 0; j + 1 < kk; ++j) {
        const float* __restrict sj = state + j * ch + c0;
        for (std::int64_t c = 0; c < nc; ++c) acc[c] += w[(c0 + c) * kk + j] * sj[c];
      }
      for (std::int64_t c = 0; c < nc; ++c) acc[c] += w[(c0 + c) * kk + kk - 1] * in[c];
      if (bias != nullptr)
        for (std::int64_t c = 0; c < nc; ++c) acc[c] += bias[c0 + c];
      if (shape.apply_silu)
        for (std::int64_t c = 0; c < nc; ++c) acc[c] = acc[c] / (1.0f + exp_poly(-acc[c]));
      float* __restrict yt = y + t * ys + c0;
      for (std::int64_t c = 0; c < nc; ++c) yt[c] = acc[c];
      for (std::int64_t j = 0; j + 2 < kk; ++j)
        for (std::int64_t c = 0; c < nc; ++c) state[j * ch + c0 + c] = state[(j + 1) * ch + c0 + c];
      if (kk > 1)
        for (std::int64_t c = 0; c < nc; ++c) state[(kk - 2) * ch + c0 + c] = in[c];
    }
  }
}

}  // namespace recur::kernels::detail::RECUR_VEC_NS
