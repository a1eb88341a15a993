// Reference Granite 4.0-H forward (docs/model-granite.md, from transformers'
// modeling_granitemoehybrid.py), float64: muP multipliers on the embedding, the residual branches,
// the attention scores and the logits; NoPE attention unless position_embedding_type is "rope".
// The MoE variants (num_local_experts > 0): GraniteMoeHybridMoE beside the shared MLP, the top
// num_experts_per_tok router logits (lower index first on equal ones) and a softmax over just
// those as the experts' weights; the layer's MLP output is moe(x) + shared_mlp(x).
#include <algorithm>
#include <cmath>
#include <optional>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

bool config_flag(const Checkpoint& ck, const std::string& key, bool fallback) {
  auto v = ck.config().get_bool(key, fallback);
  RECUR_CHECK_MSG(v.is_ok(), key.c_str());
  return *v;
}

bool uses_rope(const Checkpoint& ck) {
  auto t = ck.config().get_string("position_embedding_type");
  return t.is_ok() && *t == "rope";
}

Vec add_bias(const Checkpoint& ck, const std::string& name, Vec y, bool bias) {
  if (!bias) return y;
  const Tensor b = load(ck, name);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += b.v[i];
  return y;
}

// Self-attention over the normed rows x, scores scaled by attention_multiplier.
std::vector<Vec> attention(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", H));
  const auto hidden = static_cast<std::int64_t>(cfg(ck, "hidden_size", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", static_cast<double>(hidden / H)));
  const double mult = cfg(ck, "attention_multiplier", 1.0);
  const bool bias = config_flag(ck, "attention_bias", false), rope_on = uses_rope(ck);
  const double theta = cfg(ck, "rope_theta", 10000.0);
  const Tensor wq = load(ck, p + "q_proj.weight"), wk = load(ck, p + "k_proj.weight");
  const Tensor wv = load(ck, p + "v_proj.weight"), wo = load(ck, p + "o_proj.weight");
  std::vector<Vec> q, k, v;
  for (std::size_t t = 0; t < x.size(); ++t) {
    q.push_back(add_bias(ck, p + "q_proj.bias", matvec(wq, x[t]), bias));
    k.push_back(add_bias(ck, p + "k_proj.bias", matvec(wk, x[t]), bias));
    v.push_back(add_bias(ck, p + "v_proj.bias", matvec(wv, x[t]), bias));
    if (rope_on) {
      for (std::int64_t h = 0; h < H; ++h) rope(q[t].data() + h * hd, hd, std::int64_t(t), theta);
      for (std::int64_t h = 0; h < Hkv; ++h) rope(k[t].data() + h * hd, hd, std::int64_t(t), theta);
    }
    // causal_attention scales by hd^-1/2; Granite's scale is attention_multiplier.
    for (double& e : q[t]) e *= mult * std::sqrt(static_cast<double>(hd));
  }
  round_like_kv_cache(ck, &k, &v);
  const std::vector<Vec> att = causal_attention(q, k, v, H, Hkv, hd);
  std::vector<Vec> out;
  for (const Vec& a : att) out.push_back(add_bias(ck, p + "o_proj.bias", matvec(wo, a), bias));
  return out;
}

Mamba2Geometry mamba_geometry(const Checkpoint& ck) {
  Mamba2Geometry g;
  const auto hidden = static_cast<std::int64_t>(cfg(ck, "hidden_size", 0));
  g.n_heads = static_cast<std::int64_t>(cfg(ck, "mamba_n_heads", 128));
  g.head_dim = static_cast<std::int64_t>(cfg(
      ck, "mamba_d_head",
      static_cast<double>(cfg(ck, "mamba_expand", 2) * hidden) / static_cast<double>(g.n_heads)));
  g.d_state = static_cast<std::int64_t>(cfg(ck, "mamba_d_state", 256));
  g.n_groups = static_cast<std::int64_t>(cfg(ck, "mamba_n_groups", 1));
  g.norm_groups = 1;  // GraniteMoeHybridRMSNormGated: RMS over the whole d_inner row
  g.kernel = static_cast<std::int64_t>(cfg(ck, "mamba_d_conv", 4));
  g.eps = cfg(ck, "rms_norm_eps", 1e-6);
  g.conv_bias = config_flag(ck, "mamba_conv_bias", true);
  g.proj_bias = config_flag(ck, "mamba_proj_bias", false);
  if (ck.config().has("time_step_limit")) {
    auto lim = *ck.config().get_floats("time_step_limit");
    g.dt_min = lim[0], g.dt_max = lim[1];
  }
  return g;
}

// Expert e's slab `part` of `parts` in a stacked [E, parts * rows, cols] tensor, as a matrix.
Tensor expert_slab(const Tensor& t, std::int64_t e, std::int64_t parts, std::int64_t part) {
  const std::int64_t rows = t.shape[1] / parts, cols = t.shape[2];
  Tensor out;
  out.shape = {rows, cols};
  out.bf16 = t.bf16;
  out.quant_group = t.quant_group;
  const auto begin = t.v.begin() + static_cast<std::ptrdiff_t>((e * parts + part) * rows * cols);
  out.v.assign(begin, begin + static_cast<std::ptrdiff_t>(rows * cols));
  return out;
}

// block_sparse_moe of one row x: softmax over the chosen experts' logits, their SwiGLUs' sum.
struct GraniteMoe {
  Tensor router;
  std::vector<Tensor> gate, up, down;
  std::size_t top_k = 0;

  GraniteMoe(const Checkpoint& ck, const std::string& p) {
    router = load(ck, p + "router.layer.weight");
    const Tensor in = load(ck, p + "input_linear.weight");
    const Tensor out = load(ck, p + "output_linear.weight");
    for (std::int64_t e = 0; e < in.shape[0]; ++e) {
      gate.push_back(expert_slab(in, e, 2, 0));
      up.push_back(expert_slab(in, e, 2, 1));
      down.push_back(expert_slab(out, e, 1, 0));
    }
    top_k = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 2));
  }

  Vec operator()(const Vec& x) const {
    const Vec logits = matvec(router, x);
    const std::vector<std::size_t> chosen = route_next(logits, top_k);
    double mx = -1e300, sum = 0.0;
    for (std::size_t e : chosen) mx = std::max(mx, logits[e]);
    for (std::size_t e : chosen) sum += std::exp(logits[e] - mx);
    Vec y(x.size(), 0.0);
    for (std::size_t e : chosen) {
      Vec g = matvec(gate[e], x);
      const Vec u = matvec(up[e], x);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec o = matvec(down[e], g);
      const double w = std::exp(logits[e] - mx) / sum;
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += w * o[i];
    }
    return y;
  }
};

}  // namespace

std::vector<Vec> forward_granite_hybrid(const Checkpoint& ck,
                                        const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const double eps = cfg(ck, "rms_norm_eps", 1e-6);
  const double em = cfg(ck, "embedding_multiplier", 1.0);
  const double rm = cfg(ck, "residual_multiplier", 1.0);
  const double ls = cfg(ck, "logits_scaling", 1.0);
  const bool moe = cfg(ck, "num_local_experts", 8) > 0;
  const auto types = *ck.config().get_strings("layer_types");
  const Tensor embed = load(ck, "model.embed_tokens.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
    for (double& e : h[t]) e *= em;
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Tensor n1 = load(ck, p + "input_layernorm.weight");
    const Tensor n2 = load(ck, p + "post_attention_layernorm.weight");
    std::vector<Vec> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = rms_norm(h[t], n1.v, eps, false);
    const std::vector<Vec> y = types[static_cast<std::size_t>(l)] == "attention"
                                   ? attention(ck, p + "self_attn.", x)
                                   : mamba2_mixer(ck, p + "mamba.", mamba_geometry(ck), x);
    const Tensor w_in = load(ck, p + "shared_mlp.input_linear.weight");
    const Tensor w_out = load(ck, p + "shared_mlp.output_linear.weight");
    const std::size_t f = static_cast<std::size_t>(w_out.cols());
    std::optional<GraniteMoe> experts;
    if (moe) experts.emplace(ck, p + "block_sparse_moe.");
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += rm * y[t][i];
      const Vec xn = rms_norm(h[t], n2.v, eps, false);
      const Vec gu = matvec(w_in, xn);
      Vec a(f);
      for (std::size_t i = 0; i < f; ++i) a[i] = silu(gu[i]) * gu[f + i];
      Vec o = matvec(w_out, a);
      if (experts) {
        const Vec r = (*experts)(xn);
        for (std::size_t i = 0; i < d; ++i) o[i] += r[i];
      }
      for (std::size_t i = 0; i < d; ++i) h[t][i] += rm * o[i];
    }
  }
  check_routes_consumed();
  const Tensor wf = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  std::vector<Vec> logits = head_logits(ck, h, embed);
  for (Vec& row : logits) {
    for (double& e : row) e /= ls;
  }
  return logits;
}

}  // namespace recur::model::reference
