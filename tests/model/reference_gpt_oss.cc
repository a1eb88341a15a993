// Reference gpt-oss forward (docs/model-gpt-oss.md), float64, written from transformers'
// modeling_gpt_oss.py: pre-norm layers; attention with q/k/v/o biases, YaRN RoPE (cos and sin
// times the attention factor), a sliding window on "sliding_attention" layers and a learned sink
// logit per head that joins the softmax; the router's top k logits (with its bias) softmaxed; each
// chosen expert's gate_up (gate even, up odd) with bias, gate clamped above at swiglu_limit, up to
// ±limit, (up + 1) · gate · σ(1.702 · gate), down with bias, weighted. MXFP4 experts are
// dequantized here from the e2m1 table (and the engine's int8 rounding of their inputs followed);
// a dequantized checkpoint's gate_up_proj [E, d, 2f] / down_proj [E, f, d] are applied as x · W.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

// transformers' _compute_yarn_parameters for gpt-oss's config (truncate false here, as released).
struct Yarn {
  Vec inv_freq;
  double factor = 1.0;
};

Yarn yarn(const Checkpoint& ck, std::int64_t dim) {
  const double base = cfg(ck, "rope_theta", 150000.0);
  Yarn y;
  y.inv_freq.resize(static_cast<std::size_t>(dim / 2));
  auto type = ck.config().get_string("rope_scaling.rope_type");
  if (!type.is_ok() || *type != "yarn") {
    for (std::size_t i = 0; i < y.inv_freq.size(); ++i) {
      y.inv_freq[i] = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) / static_cast<double>(dim));
    }
    return y;
  }
  const double factor = cfg(ck, "rope_scaling.factor", 1.0);
  const double orig = cfg(ck, "rope_scaling.original_max_position_embeddings", 4096);
  const double fast = cfg(ck, "rope_scaling.beta_fast", 32),
               slow = cfg(ck, "rope_scaling.beta_slow", 1);
  auto truncate = ck.config().get_bool("rope_scaling.truncate", true);
  RECUR_CHECK(truncate.is_ok());
  y.factor = factor > 1 ? 0.1 * std::log(factor) + 1.0 : 1.0;
  const auto d = static_cast<double>(dim);
  auto dim_of = [&](double rot) {
    return d * std::log(orig / (rot * 2 * std::numbers::pi)) / (2 * std::log(base));
  };
  double lo = dim_of(fast), hi = dim_of(slow);
  if (*truncate) lo = std::floor(lo), hi = std::ceil(hi);
  lo = std::max(lo, 0.0), hi = std::min(hi, d - 1);
  if (lo == hi) hi += 0.001;
  for (std::size_t i = 0; i < y.inv_freq.size(); ++i) {
    const double extra = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) / d);
    const double ramp = std::clamp((static_cast<double>(i) - lo) / (hi - lo), 0.0, 1.0);
    // ramp 0: extrapolation (the trained frequency), 1: interpolation (divided by factor).
    y.inv_freq[i] = extra * (1 - ramp) + extra / factor * ramp;
  }
  return y;
}

void rope_yarn(double* head, std::int64_t hd, std::int64_t pos, const Yarn& y) {
  const std::int64_t half = hd / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * y.inv_freq[static_cast<std::size_t>(i)];
    const double c = std::cos(a) * y.factor, s = std::sin(a) * y.factor;
    const double x0 = head[i], x1 = head[i + half];
    head[i] = x0 * c - x1 * s;
    head[i + half] = x1 * c + x0 * s;
  }
}

Vec add(Vec a, const Vec& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// e2m1[c] · 2^(e − 127), from the OCP MX table.
double mxfp4(unsigned code, unsigned scale) {
  static constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double v = kE2m1[code & 7u] * std::ldexp(1.0, static_cast<int>(scale) - 127);
  return (code & 8u) != 0 ? -v : v;
}

// Expert e's matrix [rows, cols] (Linear orientation) with `row_of(r)` the stored row.
template <typename RowOf>
Tensor expert_matrix(const Checkpoint& ck, const std::string& name, std::int64_t e,
                     std::int64_t rows, std::int64_t cols, RowOf row_of) {
  Tensor out;
  out.shape = {rows, cols};
  out.v.resize(static_cast<std::size_t>(rows * cols));
  if (const TensorInfo* b = ck.find(name + "_blocks"); b != nullptr) {
    const TensorInfo* s = ck.find(name + "_scales");
    RECUR_CHECK(s != nullptr);
    const std::int64_t stored_rows = b->shape[1];
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t sr = e * stored_rows + row_of(r);
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::uint8_t byte = b->data[sr * cols / 2 + c / 2];
        const unsigned code = c % 2 == 0 ? byte & 0x0Fu : byte >> 4;
        out.v[static_cast<std::size_t>(r * cols + c)] =
            mxfp4(code, s->data[sr * cols / 32 + c / 32]);
      }
    }
    out.quant_group = 32;  // the engine quantizes the input to int8 per block of 32
    return out;
  }
  const Tensor t = load(ck, name);  // [E, cols, stored rows], applied as x · W
  const std::int64_t stored_rows = t.shape[2];
  out.bf16 = t.bf16;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      out.v[static_cast<std::size_t>(r * cols + c)] =
          t.v[static_cast<std::size_t>((e * cols + c) * stored_rows + row_of(r))];
    }
  }
  return out;
}

}  // namespace

std::vector<Vec> forward_gpt_oss(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 0));
  const auto E = static_cast<std::int64_t>(cfg(ck, "num_local_experts", 0));
  const auto K = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 0));
  const auto f = static_cast<std::int64_t>(cfg(ck, "intermediate_size", 0));
  const auto window = static_cast<std::int64_t>(cfg(ck, "sliding_window", 128));
  const double eps = cfg(ck, "rms_norm_eps", 1e-5), limit = cfg(ck, "swiglu_limit", 7.0);
  auto types = ck.config().get_strings("layer_types");
  RECUR_CHECK(types.is_ok());
  const Yarn y = yarn(ck, hd);
  const Tensor embed = load(ck, "model.embed_tokens.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string a = p + "self_attn.";
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    const Tensor wq = load(ck, a + "q_proj.weight"), bq = load(ck, a + "q_proj.bias");
    const Tensor wk = load(ck, a + "k_proj.weight"), bk = load(ck, a + "k_proj.bias");
    const Tensor wv = load(ck, a + "v_proj.weight"), bv = load(ck, a + "v_proj.bias");
    const Tensor wo = load(ck, a + "o_proj.weight"), bo = load(ck, a + "o_proj.bias");
    const Tensor sinks = load(ck, a + "sinks");
    std::vector<Vec> q(T), k(T), v(T);
    for (std::size_t t = 0; t < T; ++t) {
      const Vec x = rms_norm(h[t], w_in.v, eps, false);
      q[t] = add(matvec(wq, x), bq.v);
      k[t] = add(matvec(wk, x), bk.v);
      v[t] = add(matvec(wv, x), bv.v);
      for (std::int64_t j = 0; j < H; ++j) rope_yarn(q[t].data() + j * hd, hd, std::int64_t(t), y);
      for (std::int64_t j = 0; j < Hkv; ++j)
        rope_yarn(k[t].data() + j * hd, hd, std::int64_t(t), y);
    }
    round_like_kv_cache(ck, &k, &v);
    // transformers' eager_attention_forward: the sink is one more logit of the softmax.
    const bool sliding = (*types)[static_cast<std::size_t>(l)] == "sliding_attention";
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<Vec> att(T, Vec(static_cast<std::size_t>(H * hd), 0.0));
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t first =
          sliding && std::int64_t(t) >= window ? t - static_cast<std::size_t>(window) + 1 : 0;
      for (std::int64_t j = 0; j < H; ++j) {
        const std::int64_t kh = j / (H / Hkv);
        Vec s(t + 1 - first);
        double mx = sinks.v[static_cast<std::size_t>(j)];
        for (std::size_t u = first; u <= t; ++u) {
          double dot = 0;
          for (std::int64_t e = 0; e < hd; ++e) {
            dot += q[t][static_cast<std::size_t>(j * hd + e)] *
                   k[u][static_cast<std::size_t>(kh * hd + e)];
          }
          s[u - first] = dot * scale;
          mx = std::max(mx, s[u - first]);
        }
        double z = std::exp(sinks.v[static_cast<std::size_t>(j)] - mx);
        for (double& x : s) z += (x = std::exp(x - mx));
        for (std::size_t u = first; u <= t; ++u) {
          for (std::int64_t e = 0; e < hd; ++e) {
            att[t][static_cast<std::size_t>(j * hd + e)] +=
                s[u - first] / z * v[u][static_cast<std::size_t>(kh * hd + e)];
          }
        }
      }
    }
    const std::string m = p + "mlp.";
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    const Tensor router = load(ck, m + "router.weight"), router_b = load(ck, m + "router.bias");
    const Tensor gu_b = load(ck, m + "experts.gate_up_proj_bias");
    const Tensor dn_b = load(ck, m + "experts.down_proj_bias");
    std::vector<Tensor> wg, wu, wd;
    const std::int64_t dm = static_cast<std::int64_t>(d);
    for (std::int64_t e = 0; e < E; ++e) {
      wg.push_back(expert_matrix(ck, m + "experts.gate_up_proj", e, f, dm,
                                 [](std::int64_t r) { return 2 * r; }));
      wu.push_back(expert_matrix(ck, m + "experts.gate_up_proj", e, f, dm,
                                 [](std::int64_t r) { return 2 * r + 1; }));
      wd.push_back(
          expert_matrix(ck, m + "experts.down_proj", e, dm, f, [](std::int64_t r) { return r; }));
    }
    for (std::size_t t = 0; t < T; ++t) {
      h[t] = add(h[t], add(matvec(wo, att[t]), bo.v));
      const Vec x = rms_norm(h[t], w_post.v, eps, false);
      const Vec logits = add(matvec(router, x), router_b.v);
      const std::vector<std::size_t> chosen = route_next(logits, K);
      double mx = -1e300, z = 0;
      for (std::size_t e : chosen) mx = std::max(mx, logits[e]);
      for (std::size_t e : chosen) z += std::exp(logits[e] - mx);
      for (std::size_t e : chosen) {
        const double w = std::exp(logits[e] - mx) / z;
        Vec g = matvec(wg[e], x), u = matvec(wu[e], x);
        for (std::int64_t i = 0; i < f; ++i) {
          const double gi = std::min(
              g[static_cast<std::size_t>(i)] + gu_b.v[static_cast<std::size_t>(e) * 2 * f + 2 * i],
              limit);
          const double ui = std::clamp(u[static_cast<std::size_t>(i)] +
                                           gu_b.v[static_cast<std::size_t>(e) * 2 * f + 2 * i + 1],
                                       -limit, limit);
          g[static_cast<std::size_t>(i)] = (ui + 1) * gi * sigmoid(1.702 * gi);
        }
        const Vec out = matvec(wd[e], g);
        for (std::size_t i = 0; i < d; ++i) {
          h[t][i] += w * (out[i] + dn_b.v[static_cast<std::size_t>(e) * d + i]);
        }
      }
    }
  }
  const Tensor wf = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
