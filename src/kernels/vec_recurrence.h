// Internal to kernels/: the vector forms of the per-token recurrences, the gated delta rule
// (Qwen3.5 GDN) and the Mamba2 scan, compiled per ISA (vec_math.h says how and why; the anonymous
// namespace gives each ISA file its own copy). Per state element the arithmetic and its order
// are the reference's.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/reference.h"
#include "kernels/vec_math.h"

namespace recur::kernels::detail::vec {
namespace {

// State rows requested ahead of the first pass (4 KiB at Dv 128): the hardware prefetcher
// restarts at every 4 KiB page, and a decode step reads each head's state from memory once.
inline constexpr std::int64_t kDeltaAheadRows = 8;

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
      if (a + kDeltaAheadRows < dk) {
        for (std::int64_t b = 0; b < dv; b += kLanes) {
          __builtin_prefetch(sa + kDeltaAheadRows * dv + b, 1, 3);
        }
      }
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

// Tokens ahead whose q, k and v lines a prefill's column block requests: a token's rows lie a
// conv row (32 KiB at Qwen3-Next's geometry) apart, a stride the hardware prefetchers did not
// follow, so each token waited on ~20 misses. Qwen3-Next's 512-token recurrence on the Zen 5 VM:
// 17.2 -> 13.7 ms on one thread, 12.7 -> 9.5 ms on two (1, 2, 4, 8 tokens ahead alike).
inline constexpr std::int64_t kDeltaAheadTokens = 4;

// Columns b of S evolve independently (u[b] and o[b] read column b only), so a prefill walks the
// state in blocks of kGatedDeltaCols columns, copied into a contiguous buffer that stays in L1 for
// all the call's tokens (in the state its rows are 4·Dv bytes apart and would crowd a few cache
// sets). Per column the arithmetic and its order are gated_delta_head's: each 16-column vector
// carries its own sums over a, and NV of them run side by side so the add chains overlap. Lanes
// past Dv hold zeros and are never written back.
#ifdef __AVX512F__
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
    if (t + kDeltaAheadTokens < shape.n_tokens) {
      const std::int64_t ahead = kDeltaAheadTokens * shape.qkv_stride;
      for (std::int64_t a = 0; a < dk; a += kLanes) {
        __builtin_prefetch(q + ahead + a, 0, 3);
        __builtin_prefetch(k + ahead + a, 0, 3);
      }
      for (int c = 0; c < NV; ++c) __builtin_prefetch(v + ahead + c * kLanes, 0, 3);
    }
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
#endif

#ifndef __AVX512F__
// The same kernel in AVX2's own 8-column vectors. Written with the 16-lane type, GCC built each
// splat through 16 scalar stores and moved halves through general registers: the recurrence took
// 53% of a qwen3.5 prefill, 17x its AVX-512 time. Per column the arithmetic and its order are
// gated_delta_cols_n's, so both ISAs give the same bytes. The second pass goes over the columns
// in halves of 4 vectors: u and o of all 8 would need more than AVX2's 16 registers.
inline V8 load8_upto(const float* p, std::int64_t n) {
  V8 v;
  if (n >= 8) {
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
  }
  alignas(32) float t[8] = {};
  for (std::int64_t l = 0; l < n; ++l) t[l] = p[l];
  __builtin_memcpy(&v, t, sizeof(v));
  return v;
}

template <int NV>  // 8-column vectors, 1 .. 8
void gated_delta_cols8(const GatedDeltaInputs& in, float* __restrict s, float* out,
                       const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) {
  const std::int64_t dk = shape.k_dim, dv = shape.v_dim;
  const std::int64_t hk = j / (shape.n_v_heads / shape.n_k_heads);
  const std::int64_t nc = min_i(kGatedDeltaCols, dv - b0);  // columns held
  alignas(32) V8 blk[kMaxHeadDim * NV];                     // [Dk][NV] vectors of 8 columns
  for (std::int64_t a = 0; a < dk; ++a)
    for (int c = 0; c < NV; ++c) blk[a * NV + c] = load8_upto(s + a * dv + b0 + c * 8, nc - c * 8);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* q = in.q + t * shape.qkv_stride + hk * dk;
    const float* k = in.k + t * shape.qkv_stride + hk * dk;
    const float* v = in.v + t * shape.qkv_stride + j * dv + b0;
    const V8 alpha = splat8(std::exp(in.g[t * shape.n_v_heads + j]));
    const V8 beta = splat8(in.beta[t * shape.n_v_heads + j]);
    if (t + kDeltaAheadTokens < shape.n_tokens) {
      const std::int64_t ahead = kDeltaAheadTokens * shape.qkv_stride;
      for (std::int64_t a = 0; a < dk; a += kLanes) {
        __builtin_prefetch(q + ahead + a, 0, 3);
        __builtin_prefetch(k + ahead + a, 0, 3);
      }
      for (int c = 0; c < NV; c += 2) __builtin_prefetch(v + ahead + c * 8, 0, 3);
    }
    V8 kv[NV] = {};
    for (std::int64_t a = 0; a < dk; ++a) {
      const V8 ka = splat8(k[a]);
      for (int c = 0; c < NV; ++c) {
        const V8 r = blk[a * NV + c] * alpha;
        blk[a * NV + c] = r;
        kv[c] += r * ka;
      }
    }
    V8 u[NV];
    for (int c = 0; c < NV; ++c) u[c] = (load8_upto(v + c * 8, nc - c * 8) - kv[c]) * beta;
    float* dst = out + (t * shape.n_v_heads + j) * dv + b0;
    for (int c0 = 0; c0 < NV; c0 += 4) {
      constexpr int kHalf = NV < 4 ? NV : 4;
      V8 o[kHalf] = {};
      for (std::int64_t a = 0; a < dk; ++a) {
        const V8 ka = splat8(k[a]), qa = splat8(q[a]);
        for (int c = 0; c < kHalf && c0 + c < NV; ++c) {
          const V8 r = blk[a * NV + c0 + c] + ka * u[c0 + c];
          blk[a * NV + c0 + c] = r;
          o[c] += r * qa;
        }
      }
      for (int c = 0; c < kHalf && c0 + c < NV; ++c) {
        const std::int64_t col = (c0 + c) * 8;
        if (col + 8 <= nc) {
          __builtin_memcpy(dst + col, &o[c], sizeof(V8));
        } else {
          for (std::int64_t l = 0; col + l < nc; ++l) dst[col + l] = o[c][l];
        }
      }
    }
  }
  for (std::int64_t a = 0; a < dk; ++a)
    for (int c = 0; c < NV; ++c)
      for (std::int64_t l = 0; l < 8 && c * 8 + l < nc; ++l)
        s[a * dv + b0 + c * 8 + l] = blk[a * NV + c][l];
}
#endif

inline void gated_delta_cols(const GatedDeltaInputs& in, float* __restrict s, float* out,
                             const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) {
  static_assert(kGatedDeltaCols == 4 * kLanes);
#ifndef __AVX512F__
  switch ((min_i(kGatedDeltaCols, shape.v_dim - b0) + 7) / 8) {
    case 1:
      return gated_delta_cols8<1>(in, s, out, shape, j, b0);
    case 2:
      return gated_delta_cols8<2>(in, s, out, shape, j, b0);
    case 3:
      return gated_delta_cols8<3>(in, s, out, shape, j, b0);
    case 4:
      return gated_delta_cols8<4>(in, s, out, shape, j, b0);
    case 5:
      return gated_delta_cols8<5>(in, s, out, shape, j, b0);
    case 6:
      return gated_delta_cols8<6>(in, s, out, shape, j, b0);
    case 7:
      return gated_delta_cols8<7>(in, s, out, shape, j, b0);
    default:
      return gated_delta_cols8<8>(in, s, out, shape, j, b0);
  }
#else
  switch ((min_i(kGatedDeltaCols, shape.v_dim - b0) + kLanes - 1) / kLanes) {
    case 1:
      return gated_delta_cols_n<1>(in, s, out, shape, j, b0);
    case 2:
      return gated_delta_cols_n<2>(in, s, out, shape, j, b0);
    case 3:
      return gated_delta_cols_n<3>(in, s, out, shape, j, b0);
    default:
      return gated_delta_cols_n<4>(in, s, out, shape, j, b0);
  }
#endif
}

// Rows p of a head's state evolve independently (dt and dA are per head, x[p] per row), so each
// row runs through a block of kMambaTokens tokens while it stays in registers (d_state 64 or 128:
// 4 or 8 vectors) or in L1, and B / C of the block are reused by every row. Per row and token the
// arithmetic is the reference's, in its order (the dot as dot_lanes).
inline constexpr std::int64_t kMambaTokens = 16;
// Rows requested ahead (2 KiB at d_state 128): a decode step reads each state from memory once,
// in 32 KiB heads the hardware prefetcher would restart on at every page.
inline constexpr std::int64_t kMambaAheadRows = 4;

struct MambaBlock {
  std::int64_t h = 0, g = 0, t0 = 0, nt = 0;
  float dt[kMambaTokens], da[kMambaTokens];
};

// Out of line, as GCC placed it while these kernels had vague linkage: with internal linkage it
// inlines it into mamba2_head, which changed the speed (single-thread, cache-resident: AVX-512
// decode 0.85x the time, AVX2 1.03-1.05x) - a change of its own, not of the file structure.
#ifdef __AVX512F__
template <int NV>
[[gnu::noinline]] void mamba2_rows_reg(const Mamba2Inputs& in, float* __restrict s, float* y,
                                       const Mamba2Shape& shape, const MambaBlock& blk) {
  const std::int64_t p_dim = shape.head_dim, n_dim = shape.d_state;
  for (std::int64_t p = 0; p < p_dim; ++p) {
    float* sp = s + p * n_dim;
    if (p + kMambaAheadRows < p_dim) {
      for (int c = 0; c < NV; ++c) {
        __builtin_prefetch(sp + kMambaAheadRows * n_dim + c * kLanes, 1, 3);
      }
    }
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
#endif

#ifndef __AVX512F__
// mamba2_rows_reg in AVX2's 8-lane vectors: the 16-lane form spilled on every operation (GCC moves
// its halves through memory). A row of 128 states is 16 ymm, all AVX2 has, so the row goes through
// the block's tokens in passes of 64 states, each token's two 8-lane partial sums kept between
// passes; per lane the sums run over the chunks in order, so tree_sum gives mamba2_rows_reg's
// bytes.
template <int NV>  // 16-state chunks of a row: 4 or 8
[[gnu::noinline]] void mamba2_rows_reg8(const Mamba2Inputs& in, float* __restrict s, float* y,
                                        const Mamba2Shape& shape, const MambaBlock& blk) {
  constexpr int kPass = 4;  // chunks per pass: 8 ymm of state
  const std::int64_t p_dim = shape.head_dim, n_dim = shape.d_state;
  for (std::int64_t p = 0; p < p_dim; ++p) {
    float* sp = s + p * n_dim;
    if (p + kMambaAheadRows < p_dim) {
      for (int c = 0; c < NV; ++c) {
        __builtin_prefetch(sp + kMambaAheadRows * n_dim + c * kLanes, 1, 3);
      }
    }
    V8 lo_sum[kMambaTokens], hi_sum[kMambaTokens];
    for (int c0 = 0; c0 < NV; c0 += kPass) {
      V8 st[2 * kPass];
      for (int c = 0; c < 2 * kPass; ++c) st[c] = load_v<V8>(sp + c0 * kLanes + c * 8);
      for (std::int64_t tt = 0; tt < blk.nt; ++tt) {
        const std::int64_t t = blk.t0 + tt;
        const float xp = in.x[t * shape.x_stride + blk.h * p_dim + p];
        const float* bv = in.b + t * shape.x_stride + blk.g * n_dim + c0 * kLanes;
        const float* cv = in.c + t * shape.x_stride + blk.g * n_dim + c0 * kLanes;
        const V8 dtx = splat8(blk.dt[tt] * xp), dat = splat8(blk.da[tt]);
        V8 lo = c0 == 0 ? V8{} : lo_sum[tt], hi = c0 == 0 ? V8{} : hi_sum[tt];
        for (int c = 0; c < kPass; ++c) {
          st[2 * c] = dat * st[2 * c] + dtx * load_v<V8>(bv + c * kLanes);
          lo += st[2 * c] * load_v<V8>(cv + c * kLanes);
          st[2 * c + 1] = dat * st[2 * c + 1] + dtx * load_v<V8>(bv + c * kLanes + 8);
          hi += st[2 * c + 1] * load_v<V8>(cv + c * kLanes + 8);
        }
        lo_sum[tt] = lo;
        hi_sum[tt] = hi;
      }
      for (int c = 0; c < 2 * kPass; ++c) store_v(sp + c0 * kLanes + c * 8, st[c]);
    }
    for (std::int64_t tt = 0; tt < blk.nt; ++tt) {
      const std::int64_t t = blk.t0 + tt;
      const float xp = in.x[t * shape.x_stride + blk.h * p_dim + p];
      y[(t * shape.n_heads + blk.h) * p_dim + p] =
          tree_sum(lo_sum[tt], hi_sum[tt]) + in.d[blk.h] * xp;
    }
  }
}
#endif

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
#ifdef __AVX512F__
      case 4:
        mamba2_rows_reg<4>(in, s, y, shape, blk);
        break;
      case 8:
        mamba2_rows_reg<8>(in, s, y, shape, blk);
        break;
#else
      case 4:
        mamba2_rows_reg8<4>(in, s, y, shape, blk);
        break;
      case 8:
        mamba2_rows_reg8<8>(in, s, y, shape, blk);
        break;
#endif
      default:
        mamba2_rows_mem(in, s, y, shape, blk);
        break;
    }
  }
}

}  // namespace
}  // namespace recur::kernels::detail::vec
