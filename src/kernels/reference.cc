// Scalar reference kernels (see reference.h): one fixed summation order, no FMA contraction.
#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention_sinks.h"
#include "util/check.h"

namespace recur::kernels::ref {
namespace {

std::int64_t or_default(std::int64_t v, std::int64_t fallback) { return v != 0 ? v : fallback; }

float mean_square_rsqrt(const float* x, std::int64_t n, float eps) {
  float ss = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  return 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
}

}  // namespace

void matmul(const float* x, std::int64_t n_rows, const WeightView& w, float* y, std::int64_t ldy) {
  const std::int64_t k_dim = w.cols;
  const std::int64_t row_bytes = k_dim * dtype_bytes(w.dtype);
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * k_dim;
    for (std::int64_t n = 0; n < w.rows; ++n) {
      const void* wr = static_cast<const char*>(w.data) + n * row_bytes;
      float acc = 0.0f;
      if (w.dtype == DType::kBF16) {
        for (std::int64_t k = 0; k < k_dim; ++k)
          acc += round_to_bf16(xr[k]) * load_as_f32(wr, w.dtype, k);
      } else {
        for (std::int64_t k = 0; k < k_dim; ++k) acc += xr[k] * load_as_f32(wr, w.dtype, k);
      }
      y[r * ldy + n] = acc;
    }
  }
}

void embedding_rows(const WeightView& table, const std::int32_t* ids, std::int64_t n_ids,
                    float* out) {
  for (std::int64_t i = 0; i < n_ids; ++i) {
    RECUR_CHECK(ids[i] >= 0 && ids[i] < table.rows);
    const WeightView row = table.slice_rows(ids[i], 1);
    for (std::int64_t c = 0; c < table.cols; ++c)
      out[i * table.cols + c] = load_as_f32(row.data, table.dtype, c);
  }
}

void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps) {
  const std::int64_t xs = or_default(shape.x_stride, shape.width);
  const std::int64_t ys = or_default(shape.y_stride, shape.width);
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    const float* xr = x + r * xs;
    float* yr = y + r * ys;
    const float inv = mean_square_rsqrt(xr, shape.width, eps);
    for (std::int64_t i = 0; i < shape.width; ++i) yr[i] = (xr[i] * inv) * w[i];
  }
}

void rms_norm_gated(const float* x, const float* z, const float* w, float* y,
                    const RowsShape& shape, float eps) {
  const std::int64_t xs = or_default(shape.x_stride, shape.width);
  const std::int64_t ys = or_default(shape.y_stride, shape.width);
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    const float* xr = x + r * xs;
    const float* zr = z + r * xs;
    float* yr = y + r * ys;
    const float inv = mean_square_rsqrt(xr, shape.width, eps);
    for (std::int64_t i = 0; i < shape.width; ++i) yr[i] = ((xr[i] * inv) * w[i]) * silu(zr[i]);
  }
}

void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, std::int64_t group_size, float eps) {
  RECUR_CHECK(group_size > 0 && shape.width % group_size == 0);
  RECUR_CHECK(group_size <= kMaxHeadDim * 16);
  const std::int64_t xs = or_default(shape.x_stride, shape.width);
  const std::int64_t ys = or_default(shape.y_stride, shape.width);
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    for (std::int64_t g0 = 0; g0 < shape.width; g0 += group_size) {
      const float* xr = x + r * xs + g0;
      const float* zr = z + r * xs + g0;
      float* yr = y + r * ys + g0;
      float ss = 0.0f;
      for (std::int64_t i = 0; i < group_size; ++i) {
        const float h = xr[i] * silu(zr[i]);
        ss += h * h;
      }
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(group_size) + eps);
      for (std::int64_t i = 0; i < group_size; ++i) {
        const float h = xr[i] * silu(zr[i]);
        yr[i] = (h * inv) * w[g0 + i];
      }
    }
  }
}

void l2_norm(float* x, const RowsShape& shape, float eps, float scale) {
  const std::int64_t xs = or_default(shape.x_stride, shape.width);
  for (std::int64_t r = 0; r < shape.n_rows; ++r) {
    float* xr = x + r * xs;
    float ss = 0.0f;
    for (std::int64_t i = 0; i < shape.width; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss + eps);
    for (std::int64_t i = 0; i < shape.width; ++i) xr[i] = (xr[i] * inv) * scale;
  }
}

void rope(float* x, const std::int32_t* positions, const RopeShape& shape, float theta) {
  const std::int64_t half = shape.rotary_dim / 2;
  RECUR_CHECK(shape.rotary_dim % 2 == 0 && shape.rotary_dim <= shape.head_dim);
  RECUR_CHECK(half <= kMaxHeadDim / 2);
  const std::int64_t hs = or_default(shape.head_stride, shape.head_dim);
  const std::int64_t ts = or_default(shape.token_stride, shape.n_heads * hs);
  float inv_freq[kMaxHeadDim / 2];
  for (std::int64_t i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(shape.rotary_dim);
    inv_freq[i] = 1.0f / std::pow(theta, e);
  }
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      const float c = std::cos(angle);
      const float s = std::sin(angle);
      for (std::int64_t h = 0; h < shape.n_heads; ++h) {
        float* xh = x + t * ts + h * hs;
        const float a = xh[i];
        const float b = xh[i + half];
        xh[i] = a * c - b * s;
        xh[i + half] = b * c + a * s;
      }
    }
  }
}

void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                     const AttentionShape& shape, std::int64_t i, std::int64_t h) {
  const std::int64_t hd = shape.head_dim;
  RECUR_CHECK(hd <= kMaxHeadDim && shape.n_heads % shape.n_kv_heads == 0);
  const std::int64_t qhs = or_default(shape.q_head_stride, hd);
  const std::int64_t qts = or_default(shape.q_token_stride, shape.n_heads * qhs);
  const std::int64_t group = shape.n_heads / shape.n_kv_heads;
  const std::int64_t n_keys = shape.pos0 + i + 1;
  RECUR_CHECK(n_keys <= shape.n_kv);
  const std::int64_t kv_row = shape.kv_token_step(), kv_head = shape.kv_head_step();
  {
    const float* qh = q + i * qts + h * qhs;
    const std::int64_t kvh = h / group;
    float acc[kMaxHeadDim] = {};
    float scores[kAttentionBlock];
    float m = -std::numeric_limits<float>::infinity();
    float l = 0.0f;
    for (std::int64_t b0 = 0; b0 < n_keys; b0 += kAttentionBlock) {
      const std::int64_t b1 = std::min(b0 + kAttentionBlock, n_keys);
      float bm = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = b0; j < b1; ++j) {
        const char* kj = static_cast<const char*>(k_cache) +
                         (j * kv_row + kvh * kv_head) * dtype_bytes(shape.kv_dtype);
        float dot = 0.0f;
        for (std::int64_t d = 0; d < hd; ++d) dot += qh[d] * load_as_f32(kj, shape.kv_dtype, d);
        scores[j - b0] = dot * shape.scale;
        bm = std::max(bm, scores[j - b0]);
      }
      const float m_new = std::max(m, bm);
      const float corr = std::exp(m - m_new);
      l *= corr;
      for (std::int64_t d = 0; d < hd; ++d) acc[d] *= corr;
      for (std::int64_t j = b0; j < b1; ++j) {
        const float p = std::exp(scores[j - b0] - m_new);
        l += p;
        const char* vj = static_cast<const char*>(v_cache) +
                         (j * kv_row + kvh * kv_head) * dtype_bytes(shape.kv_dtype);
        for (std::int64_t d = 0; d < hd; ++d) acc[d] += p * load_as_f32(vj, shape.kv_dtype, d);
      }
      m = m_new;
    }
    float* oh = out + (i * shape.n_heads + h) * hd;
    const float inv_l = 1.0f / sink_denominator(shape, h, l, m);
    for (std::int64_t d = 0; d < hd; ++d) oh[d] = acc[d] * inv_l;
  }
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x * sigmoid(x); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void silu(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = silu(x[i]);
}
void swiglu(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}
// torch's tanh form, operation for operation in f32.
void geglu(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    out[i] = 0.5f * g * (1.0f + std::tanh(inner)) * up[i];
  }
}
void sigmoid(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = sigmoid(x[i]);
}
void softplus(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = softplus(x[i]);
}
void mul_sigmoid(float* x, const float* gate, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * sigmoid(gate[i]);
}
void add(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] + x[i];
}
void add_scaled(float* y, const float* x, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] + s * x[i];
}
void softmax(float* x, std::int64_t n) {
  if (n == 0) return;
  float m = x[0];
  for (std::int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * inv;
}

void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                   const Conv1dShape& shape) {
  const std::int64_t c_n = shape.channels;
  const std::int64_t kk = shape.kernel;
  const std::int64_t xs = or_default(shape.x_stride, c_n);
  const std::int64_t ys = or_default(shape.y_stride, c_n);
  const std::int64_t ts = or_default(shape.tap_stride, c_n);
  RECUR_CHECK(kk >= 1 && kk <= 16);
  for (std::int64_t c = 0; c < c_n; ++c) {
    float window[16];
    for (std::int64_t j = 0; j + 1 < kk; ++j) window[j] = state[j * ts + c];
    for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
      window[kk - 1] = x[t * xs + c];
      float acc = 0.0f;
      for (std::int64_t j = 0; j < kk; ++j) acc += w[j * ts + c] * window[j];
      if (bias != nullptr) acc += bias[c];
      y[t * ys + c] = shape.apply_silu ? silu(acc) : acc;
      for (std::int64_t j = 0; j + 1 < kk; ++j) window[j] = window[j + 1];
    }
    for (std::int64_t j = 0; j + 1 < kk; ++j) state[j * ts + c] = window[j];
  }
}

void gated_delta_head(const GatedDeltaInputs& in, float* s, float* out,
                      const GatedDeltaShape& shape, std::int64_t j) {
  const std::int64_t dk = shape.k_dim;
  const std::int64_t dv = shape.v_dim;
  const std::int64_t hk = j / (shape.n_v_heads / shape.n_k_heads);
  RECUR_CHECK(dv <= kMaxHeadDim);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* q = in.q + t * shape.qkv_stride + hk * dk;
    const float* k = in.k + t * shape.qkv_stride + hk * dk;
    const float* v = in.v + t * shape.qkv_stride + j * dv;
    const float alpha = std::exp(in.g[t * shape.n_v_heads + j]);
    const float beta = in.beta[t * shape.n_v_heads + j];
    float kv[kMaxHeadDim] = {};
    for (std::int64_t a = 0; a < dk; ++a) {
      for (std::int64_t b = 0; b < dv; ++b) {
        s[a * dv + b] *= alpha;
        kv[b] += s[a * dv + b] * k[a];
      }
    }
    float u[kMaxHeadDim];
    for (std::int64_t b = 0; b < dv; ++b) u[b] = (v[b] - kv[b]) * beta;
    float* o = out + (t * shape.n_v_heads + j) * dv;
    for (std::int64_t b = 0; b < dv; ++b) o[b] = 0.0f;
    for (std::int64_t a = 0; a < dk; ++a) {
      for (std::int64_t b = 0; b < dv; ++b) {
        s[a * dv + b] += k[a] * u[b];
        o[b] += s[a * dv + b] * q[a];
      }
    }
  }
}

void gated_delta_gates(const float* a, const float* b, const float* a_log, const float* dt_bias,
                       float* g, float* beta, std::int64_t n_tokens, std::int64_t n_v_heads) {
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    for (std::int64_t j = 0; j < n_v_heads; ++j) {
      const std::int64_t i = t * n_v_heads + j;
      g[i] = -std::exp(a_log[j]) * softplus(a[i] + dt_bias[j]);
      beta[i] = sigmoid(b[i]);
    }
  }
}

void mamba2_head(const Mamba2Inputs& in, float* s, float* y, const Mamba2Shape& shape,
                 std::int64_t h) {
  const std::int64_t p_dim = shape.head_dim;
  const std::int64_t n_dim = shape.d_state;
  const std::int64_t g = h / (shape.n_heads / shape.n_groups);
  const float a = -std::exp(in.a_log[h]);
  for (std::int64_t t = 0; t < shape.n_tokens; ++t) {
    const float* x = in.x + t * shape.x_stride + h * p_dim;
    const float* bv = in.b + t * shape.x_stride + g * n_dim;
    const float* cv = in.c + t * shape.x_stride + g * n_dim;
    float dt = softplus(in.dt_raw[t * shape.dt_stride + h] + in.dt_bias[h]);
    dt = std::min(std::max(dt, shape.dt_min), shape.dt_max);
    const float da = std::exp(dt * a);
    for (std::int64_t p = 0; p < p_dim; ++p) {
      float* sp = s + p * n_dim;
      const float dtx = dt * x[p];
      float acc = 0.0f;
      for (std::int64_t n = 0; n < n_dim; ++n) {
        sp[n] = da * sp[n] + dtx * bv[n];
        acc += sp[n] * cv[n];
      }
      y[(t * shape.n_heads + h) * p_dim + p] = acc + in.d[h] * x[p];
    }
  }
}

float sample_max(const float* logits, std::int64_t n, const std::uint64_t* allowed) {
  float best = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < n; ++i) {
    if (allowed == nullptr || ((allowed[i >> 6] >> (i & 63)) & 1) != 0) {
      best = std::max(best, logits[i]);
    }
  }
  return best;
}

void sample_block_sums(const SampleRow& row, double* blocks) {
  for (std::int64_t b = 0; b * kSampleBlock < row.n; ++b) {
    double lane[4] = {0.0, 0.0, 0.0, 0.0};
    const std::int64_t end = std::min(row.n, (b + 1) * kSampleBlock);
    for (std::int64_t i = b * kSampleBlock; i < end; ++i) lane[i & 3] += sample_weight(row, i);
    blocks[b] = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  }
}

}  // namespace recur::kernels::ref
