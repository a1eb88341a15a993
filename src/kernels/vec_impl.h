// Internal to kernels/: the vector forms of the recurrences, the norms and the activations (and,
// through vec_attention.h, attention), written as plain loops and 16-lane GCC vectors the compiler
// maps onto each ISA. vec_avx2.cc and vec_avx512.cc include this file with their
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

inline float sum_squares_lanes(const float* __restrict a, std::int64_t n) {
  return dot_lanes(a, a, n);
}

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
// Rows requested ahead (2 KiB at d_state 128): a decode step reads each state from memory once,
// in 32 KiB heads the hardware prefetcher would restart on at every page.
inline constexpr std::int64_t kMambaAheadRows = 4;

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

inline void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.width;
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    const float* xr = x + r * xs;
    float* yr = y + r * ys;
    const float inv =
        1.0f /
        std::sqrt(sum_squares_lanes(xr, shape.width) / static_cast<float>(shape.width) + eps);
    for (std::int64_t i = 0; i < shape.width; ++i) yr[i] = (xr[i] * inv) * w[i];
  }
}

// exp(x) for the activations, branch-free so loops over it vectorise: x = n·ln2 + r with
// |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial (error < 2 ulp), times 2^n built in the
// exponent bits. Inputs are clamped to [-87, 88], where exp stays a normal finite float. One
// body for a float and for 16 lanes held in registers (exp_poly16), so every lane runs the
// scalar's operations in its order and gives its bytes.
typedef std::int32_t V16i __attribute__((vector_size(64)));
inline float as_t(float, float c) { return c; }
inline V16 as_t(V16, float c) { return splat16(c); }
inline float exp_bits(std::int32_t e) { return __builtin_bit_cast(float, e); }
inline V16 exp_bits(V16i e) { return (V16)e; }
inline std::int32_t to_i32(float n) { return static_cast<std::int32_t>(n); }
inline V16i to_i32(V16 n) { return __builtin_convertvector(n, V16i); }

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

// Causal depthwise conv1d over channels [c_begin, c_end), token by token over blocks of
// kConvBlock channels: the block's input is copied before its output is written and the state
// rows are shifted per block, so y may alias x. Per channel the sum runs over j = 0..K-1 then adds
// the bias, as in the reference.
inline constexpr std::int64_t kConvBlock = 64;
inline void conv_channels(const float* x, const float* w, const float* bias, float* state, float* y,
                          const Conv1dShape& shape, std::int64_t c_begin, std::int64_t c_end) {
  const std::int64_t ch = shape.channels, kk = shape.kernel;
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : ch;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : ch;
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    for (std::int64_t c0 = c_begin; c0 < c_end; c0 += kConvBlock) {
      const std::int64_t nc = min_i(kConvBlock, c_end - c0);
      alignas(64) float in[kConvBlock];
      alignas(64) float acc[kConvBlock] = {};
      for (std::int64_t c = 0; c < nc; ++c) in[c] = x[t * xs + c0 + c];
      for (std::int64_t j = 0; j + 1 < kk; ++j) {
        const float* __restrict sj = state + j * ch + c0;
        const float* __restrict wj = w + j * ch + c0;
        for (std::int64_t c = 0; c < nc; ++c) acc[c] += wj[c] * sj[c];
      }
      const float* __restrict wl = w + (kk - 1) * ch + c0;
      for (std::int64_t c = 0; c < nc; ++c) acc[c] += wl[c] * in[c];
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

// K = 4 (every family here), 16 channels at a time with the three carried inputs and the taps in
// registers through all the tokens: the general loop's sums in its order (0 + w0·s0 + w1·s1 +
// w2·s2 + w3·x, then the bias, then the SiLU), so the bytes are the same. Each token's input is
// read before its output is written, and both are the same 16 channels, so y may alias x.
// AVX-512 only: on AVX2 the seven 16-lane values take 14 of the 16 ymm registers and the group
// spilled (twice the general loop's time on the Xeon VM).
inline void conv4_group(const float* x, const float* w, const float* bias, float* state, float* y,
                        const Conv1dShape& shape, std::int64_t c0) {
  const std::int64_t ch = shape.channels;
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : ch;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : ch;
  V16 s0 = load16(state + c0), s1 = load16(state + ch + c0), s2 = load16(state + 2 * ch + c0);
  const V16 w0 = load16(w + c0), w1 = load16(w + ch + c0), w2 = load16(w + 2 * ch + c0);
  const V16 w3 = load16(w + 3 * ch + c0);
  const V16 b = bias != nullptr ? load16(bias + c0) : V16{};
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const V16 in = load16(x + t * xs + c0);
    V16 acc = V16{};
    acc += w0 * s0;
    acc += w1 * s1;
    acc += w2 * s2;
    acc += w3 * in;
    if (bias != nullptr) acc += b;
    if (shape.apply_silu) acc = acc / (splat16(1.0f) + exp_poly16(-acc));
    store16(y + t * ys + c0, acc);
    s0 = s1;
    s1 = s2;
    s2 = in;
  }
  store16(state + c0, s0);
  store16(state + ch + c0, s1);
  store16(state + 2 * ch + c0, s2);
}

inline void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                          const Conv1dShape& shape) {
  std::int64_t c = 0;
#ifdef __AVX512F__
  if (shape.kernel == 4) {
    for (; c + kLanes <= shape.channels; c += kLanes) conv4_group(x, w, bias, state, y, shape, c);
  }
#endif
  conv_channels(x, w, bias, state, y, shape, c, shape.channels);
}

}  // namespace recur::kernels::detail::RECUR_VEC_NS

// Attention's tiles use this file's helpers (tree_sum, exp_poly); same namespace, same flags.
#include "kernels/vec_attention.h"
