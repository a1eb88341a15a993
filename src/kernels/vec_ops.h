// Internal to kernels/: the vector forms of the RMSNorms, the activations and the causal conv1d,
// compiled per ISA (vec_math.h says how and why; the anonymous namespace gives each ISA file its
// own copy). Each keeps the reference's order of operations, with the vector exp.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/vec_math.h"

namespace recur::kernels::detail::vec {
namespace {

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

// The reference's l2_norm with the sum of squares in lanes (as rms_norm): the reference's one
// serial add chain made a Qwen3.5 prefill's q/k norms 1% of its time.
inline void l2_norm(float* x, const RowsShape& shape, float eps, float scale) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    float* __restrict xr = x + r * xs;
    const float inv = 1.0f / std::sqrt(sum_squares_lanes(xr, shape.width) + eps);
    for (std::int64_t i = 0; i < shape.width; ++i) xr[i] = (xr[i] * inv) * scale;
  }
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
inline void add(float* __restrict y, const float* __restrict x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] + x[i];
}
inline void add_scaled(float* __restrict y, const float* __restrict x, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] + s * x[i];
}
// gelu_tanh(g) · u as g / (1 + exp(-2·√(2/π)·(g + 0.044715·g³))) · u: the tanh form's
// 0.5·(1 + tanh(z)) is σ(2z), so one vector exp does it, and without the cancellation of 1 + tanh
// at negative g. a and b are 2·√(2/π) and 2·√(2/π)·0.044715, negated. Written on V16 rather than
// left to the auto-vectoriser: out may be gate (the MLP gates in place), and the tail runs the same
// lane operations on a padded copy, so every element gets the same bytes wherever it falls (8
// lanes on AVX2, where the 16-lane type goes through memory).
// Past t = 88 exp_poly clamps, which would leave g·e^-88 where the value is below it: zero there.
template <typename V>
inline V geglu_lanes(V g, V u) {
  const V a = as_t(g, -1.5957691216057308f), b = as_t(g, -0.07135481627159680f);
  const V t = g * (a + b * (g * g));
  const V r = g / (as_t(g, 1.0f) + exp_poly_of(t)) * u;
  return t > as_t(g, 88.0f) ? as_t(g, 0.0f) : r;
}
inline void geglu(const float* gate, const float* up, float* out, std::int64_t n) {
  using V = VN;
  constexpr std::int64_t kW = sizeof(V) / sizeof(float);
  std::int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    store_v(out + i, geglu_lanes(load_v<V>(gate + i), load_v<V>(up + i)));
  }
  if (i == n) return;
  alignas(64) float g[kW] = {}, u[kW] = {}, r[kW];
  for (std::int64_t l = 0; i + l < n; ++l) {
    g[l] = gate[i + l];
    u[l] = up[i + l];
  }
  store_v(r, geglu_lanes(load_v<V>(g), load_v<V>(u)));
  for (std::int64_t l = 0; i + l < n; ++l) out[i + l] = r[l];
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
// one group (at most kMaxGateGroup), so the sum of squares and the scaling see the same h.
inline void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                                const RowsShape& shape, std::int64_t group_size, float eps) {
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.width;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.width;
  alignas(64) float h[kMaxGateGroup];
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
  const std::int64_t ch = shape.tap_stride != 0 ? shape.tap_stride : shape.channels;
  const std::int64_t kk = shape.kernel;
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.channels;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.channels;
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

// K = 4 (every family here), a register of channels at a time (16 on AVX-512, 8 on AVX2) with the
// three carried inputs and the taps in registers through all the tokens: the general loop's sums
// in its order (0 + w0·s0 + w1·s1 + w2·s2 + w3·x, then the bias, then the SiLU), so the bytes are
// the same. Each token's input is read before its output is written, and both are the same
// channels, so y may alias x. (Written with 16 lanes on AVX2 too, its seven values took 14 of the
// 16 ymm registers and the group spilled: twice the general loop's time on the Xeon VM.)
template <typename V>
inline void conv4_group(const float* x, const float* w, const float* bias, float* state, float* y,
                        const Conv1dShape& shape, std::int64_t c0) {
  const std::int64_t ch = shape.tap_stride != 0 ? shape.tap_stride : shape.channels;
  const std::int64_t xs = shape.x_stride != 0 ? shape.x_stride : shape.channels;
  const std::int64_t ys = shape.y_stride != 0 ? shape.y_stride : shape.channels;
  V s0 = load_v<V>(state + c0), s1 = load_v<V>(state + ch + c0);
  V s2 = load_v<V>(state + 2 * ch + c0);
  const V w0 = load_v<V>(w + c0), w1 = load_v<V>(w + ch + c0), w2 = load_v<V>(w + 2 * ch + c0);
  const V w3 = load_v<V>(w + 3 * ch + c0);
  const V b = bias != nullptr ? load_v<V>(bias + c0) : V{};
  const V one = as_t(V{}, 1.0f);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const V in = load_v<V>(x + t * xs + c0);
    V acc = V{};
    acc += w0 * s0;
    acc += w1 * s1;
    acc += w2 * s2;
    acc += w3 * in;
    if (bias != nullptr) acc += b;
    if (shape.apply_silu) acc = acc / (one + exp_poly_of(-acc));
    store_v(y + t * ys + c0, acc);
    s0 = s1;
    s1 = s2;
    s2 = in;
  }
  store_v(state + c0, s0);
  store_v(state + ch + c0, s1);
  store_v(state + 2 * ch + c0, s2);
}

inline void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                          const Conv1dShape& shape) {
  std::int64_t c = 0;
  if (shape.kernel == 4) {
#ifdef __AVX512F__
    for (; c + 16 <= shape.channels; c += 16) conv4_group<V16>(x, w, bias, state, y, shape, c);
#else
    for (; c + 8 <= shape.channels; c += 8) conv4_group<V8>(x, w, bias, state, y, shape, c);
#endif
  }
  conv_channels(x, w, bias, state, y, shape, c, shape.channels);
}

}  // namespace
}  // namespace recur::kernels::detail::vec
