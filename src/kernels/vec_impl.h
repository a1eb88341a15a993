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

inline float tree_sum(float* p) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) p[l] += p[l + w];
  return p[0];
}

inline float dot_lanes(const float* __restrict a, const float* __restrict b, std::int64_t n) {
  float p[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) p[l] += a[i + l] * b[i + l];
  for (int l = 0; i + l < n; ++l) p[l] += a[i + l] * b[i + l];
  return tree_sum(p);
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

inline void mamba2_head(const Mamba2Inputs& in, float* __restrict s, float* y,
                        const Mamba2Shape& shape, std::int64_t h) {
  const std::int64_t p_dim = shape.head_dim, n_dim = shape.d_state;
  const std::int64_t g = h / (shape.n_heads / shape.n_groups);
  const float a = -std::exp(in.a_log[h]);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* x = in.x + t * shape.x_stride + h * p_dim;
    const float* __restrict bv = in.b + t * shape.x_stride + g * n_dim;
    const float* __restrict cv = in.c + t * shape.x_stride + g * n_dim;
    float dt = ref::softplus(in.dt_raw[t * shape.dt_stride + h] + in.dt_bias[h]);
    dt = min_f(max_f(dt, shape.dt_min), shape.dt_max);
    const float da = std::exp(dt * a);
    for (std::int64_t p = 0; p < p_dim; ++p) {
      float* __restrict sp = s + p * n_dim;
      const float dtx = dt * x[p];
      for (std::int64_t n = 0; n < n_dim; ++n) sp[n] = da * sp[n] + dtx * bv[n];
      y[(t * shape.n_heads + h) * p_dim + p] = dot_lanes(sp, cv, n_dim) + in.d[h] * x[p];
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
