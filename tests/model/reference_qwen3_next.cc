// Reference Qwen3-Next (spec 3) and Qwen3.5-MoE forward, float64: Qwen3.5's mixers
// (reference_qwen3_5.cc; Qwen3-Next's in_proj_qkvz / in_proj_ba de-interleaved here as
// transformers' fix_query_key_value_ordering does), then per token the sparse MoE block of
// Qwen3NextSparseMoeBlock: softmax over the router logits, the top num_experts_per_tok (lower index
// first on equal probabilities), renormalised (always for qwen3_5_moe, when norm_topk_prob for
// qwen3_next), their SwiGLUs' weighted sum plus sigmoid(x · shared_expert_gate) times the shared
// expert's SwiGLU. Dense layers (Qwen3-Next's mlp_only_layers) run the intermediate_size MLP.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

Vec swiglu(const Tensor& wg, const Tensor& wu, const Tensor& wd, const Vec& x) {
  Vec g = matvec(wg, x);
  const Vec u = matvec(wu, x);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
  return matvec(wd, g);
}

// in_proj_qkvz's output per key head [q (Dk) | k (Dk) | v (r·Dv) | z (r·Dv)] and in_proj_ba's
// [b (r) | a (r)], regrouped into flat q, k, v (value head g·r + i), z, b and a.
GdnProjections interleaved_projections(const Checkpoint& ck, const std::string& p,
                                       const Qwen35Geometry& g, const std::vector<Vec>& x) {
  const Tensor wqkvz = load(ck, p + "linear_attn.in_proj_qkvz.weight");
  const Tensor wba = load(ck, p + "linear_attn.in_proj_ba.weight");
  const std::int64_t r = g.Hv / g.Hk, rv = r * g.Dv, group = 2 * g.Dk + 2 * rv;
  GdnProjections out;
  for (const Vec& xt : x) {
    const Vec qkvz = matvec(wqkvz, xt), ba = matvec(wba, xt);
    Vec q, k, v, z, b, a;
    for (std::int64_t h = 0; h < g.Hk; ++h) {
      const auto at = [&](std::int64_t off) { return qkvz.begin() + h * group + off; };
      q.insert(q.end(), at(0), at(g.Dk));
      k.insert(k.end(), at(g.Dk), at(2 * g.Dk));
      v.insert(v.end(), at(2 * g.Dk), at(2 * g.Dk + rv));
      z.insert(z.end(), at(2 * g.Dk + rv), at(group));
      b.insert(b.end(), ba.begin() + h * 2 * r, ba.begin() + h * 2 * r + r);
      a.insert(a.end(), ba.begin() + h * 2 * r + r, ba.begin() + (h + 1) * 2 * r);
    }
    q.insert(q.end(), k.begin(), k.end());
    q.insert(q.end(), v.begin(), v.end());
    out.mixed.push_back(std::move(q));
    out.z.push_back(std::move(z));
    out.b.push_back(std::move(b));
    out.a.push_back(std::move(a));
  }
  return out;
}

struct Experts {
  Tensor router, shared_gate;
  std::vector<Tensor> gate, up, down;  // routed experts, then the shared one last
};

Experts load_experts(const Checkpoint& ck, const std::string& p, std::int64_t n_experts) {
  Experts e;
  e.router = load(ck, p + "mlp.gate.weight");
  e.shared_gate = load(ck, p + "mlp.shared_expert_gate.weight");
  for (std::int64_t i = 0; i <= n_experts; ++i) {
    const std::string m =
        i < n_experts ? p + "mlp.experts." + std::to_string(i) + "." : p + "mlp.shared_expert.";
    e.gate.push_back(load(ck, m + "gate_proj.weight"));
    e.up.push_back(load(ck, m + "up_proj.weight"));
    e.down.push_back(load(ck, m + "down_proj.weight"));
  }
  return e;
}

}  // namespace

std::vector<Vec> forward_qwen3_next(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const bool next = ck.config().model_type() == "qwen3_next";
  const std::string pre = next ? "model." : "model.language_model.";
  const Qwen35Geometry g = qwen3_5_geometry(ck);
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto E = static_cast<std::int64_t>(cfg(ck, "num_experts", 0));
  const auto K = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 0));
  const auto interval = static_cast<int>(cfg(ck, "full_attention_interval", 4));
  const auto step = static_cast<int>(cfg(ck, "decoder_sparse_step", 1));
  auto norm_topk = ck.config().get_bool("norm_topk_prob", true);
  RECUR_CHECK(norm_topk.is_ok());
  const bool normalize = !next || *norm_topk;  // Qwen3_5MoeTopKRouter always renormalises
  std::vector<std::int64_t> dense;
  if (next) {
    auto only = ck.config().get_int_list("mlp_only_layers");
    RECUR_CHECK(only.is_ok());
    dense = *only;
  }
  std::vector<std::string> types;
  if (ck.config().has("layer_types")) types = *ck.config().get_strings("layer_types");
  const Tensor embed = load(ck, pre + "embed_tokens.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = pre + "layers." + std::to_string(l) + ".";
    const bool full = types.empty() ? (l + 1) % interval == 0
                                    : types[static_cast<std::size_t>(l)] == "full_attention";
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    std::vector<Vec> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = rms_norm(h[t], w_in.v, g.eps, true);
    std::vector<Vec> mix;
    if (full) {
      mix = qwen3_5_gated_attention(ck, p, g, x);
    } else {
      mix = qwen3_5_gated_delta(
          ck, p, g,
          next ? interleaved_projections(ck, p, g, x) : qwen3_5_gdn_projections(ck, p, x));
    }
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    const bool sparse =
        (l + 1) % step == 0 && std::find(dense.begin(), dense.end(), l) == dense.end();
    Experts ex;
    if (sparse) {
      ex = load_experts(ck, p, E);
    } else {
      ex.gate.push_back(load(ck, p + "mlp.gate_proj.weight"));
      ex.up.push_back(load(ck, p + "mlp.up_proj.weight"));
      ex.down.push_back(load(ck, p + "mlp.down_proj.weight"));
    }
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += mix[t][i];
      const Vec xn = rms_norm(h[t], w_post.v, g.eps, true);
      if (!sparse) {
        const Vec m = swiglu(ex.gate[0], ex.up[0], ex.down[0], xn);
        for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
        continue;
      }
      Vec prob = matvec(ex.router, xn);
      const double mx = *std::max_element(prob.begin(), prob.end());
      double sum = 0.0;
      for (double& z : prob) sum += (z = std::exp(z - mx));
      for (double& z : prob) z /= sum;
      Vec log_prob(prob.size());
      for (std::size_t e = 0; e < prob.size(); ++e) log_prob[e] = std::log(prob[e]);
      const std::vector<std::size_t> chosen = route_next(log_prob, K);
      double total = 0.0;
      for (std::size_t e : chosen) total += prob[e];
      Vec y(d, 0.0);
      for (std::size_t e : chosen) {
        const double w = normalize ? prob[e] / total : prob[e];
        const Vec m = swiglu(ex.gate[e], ex.up[e], ex.down[e], xn);
        for (std::size_t i = 0; i < d; ++i) y[i] += w * m[i];
      }
      const double s = sigmoid(matvec(ex.shared_gate, xn)[0]);
      const auto shared = static_cast<std::size_t>(E);
      const Vec m = swiglu(ex.gate[shared], ex.up[shared], ex.down[shared], xn);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += y[i] + s * m[i];
    }
  }
  check_routes_consumed();
  const Tensor wf = load(ck, pre + "norm.weight");
  for (Vec& v : h) v = rms_norm(v, wf.v, g.eps, true);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
