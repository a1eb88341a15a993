// Reference Nemotron-H forward (docs/model-nemotron-h.md, from transformers'
// modeling_nemotron_h.py and mlx-lm nemotron_h.py), float64: per block h += mixer(RMSNorm(h)) with
// the mixer from hybrid_override_pattern: M Mamba2 (gated norm per group), * attention without
// positions, - ReLU² MLP, E NemotronHMoE (route_tokens_to_experts: sigmoid scores, the top
// num_experts_per_tok of score + e_score_correction_bias among the topk_group best of n_group
// groups, weights the unbiased scores / (their sum + 1e-20) when norm_topk_prob, times
// routed_scaling_factor; ReLU² experts summed in index order, then the shared expert added).
#include <algorithm>
#include <cmath>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

std::vector<Vec> attention(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  // NemotronHConfig's defaults: 32 heads, 8 kv heads, head_dim 128 (not hidden / heads; the
  // remote-code era's attention_head_dim is not read).
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 32));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 8));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 128));
  const Tensor wq = load(ck, p + "q_proj.weight"), wk = load(ck, p + "k_proj.weight");
  const Tensor wv = load(ck, p + "v_proj.weight"), wo = load(ck, p + "o_proj.weight");
  std::vector<Vec> q, k, v;
  for (const Vec& row : x) {
    q.push_back(matvec(wq, row));
    k.push_back(matvec(wk, row));
    v.push_back(matvec(wv, row));
  }
  round_like_kv_cache(ck, &k, &v);
  std::vector<Vec> out;
  for (const Vec& a : causal_attention(q, k, v, H, Hkv, hd)) out.push_back(matvec(wo, a));
  return out;
}

Vec relu2(const Tensor& up, const Tensor& down, const Vec& x) {
  Vec u = matvec(up, x);
  for (double& e : u) e = e > 0 ? e * e : 0.0;
  return matvec(down, u);
}

std::vector<Vec> relu2_mlp(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  const Tensor up = load(ck, p + "up_proj.weight"), down = load(ck, p + "down_proj.weight");
  std::vector<Vec> out;
  for (const Vec& row : x) out.push_back(relu2(up, down, row));
  return out;
}

// NemotronHConfig's defaults: 2 experts per token, one group, norm_topk_prob true, scale 1.
std::vector<Vec> moe(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  const auto k = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 2));
  const auto n_groups = static_cast<std::size_t>(cfg(ck, "n_group", 1));
  const auto topk_groups = static_cast<std::size_t>(cfg(ck, "topk_group", 1));
  const double scale = cfg(ck, "routed_scaling_factor", 1.0);
  auto norm = ck.config().get_bool("norm_topk_prob", true);
  RECUR_CHECK(norm.is_ok());
  const Tensor router = load(ck, p + "gate.weight");
  const Tensor bias = load(ck, p + "gate.e_score_correction_bias");
  std::vector<Tensor> up, down;
  for (std::int64_t e = 0; e < router.rows(); ++e) {
    const std::string ex = p + "experts." + std::to_string(e) + ".";
    up.push_back(load(ck, ex + "up_proj.weight"));
    down.push_back(load(ck, ex + "down_proj.weight"));
  }
  const Tensor shared_up = load(ck, p + "shared_experts.up_proj.weight");
  const Tensor shared_down = load(ck, p + "shared_experts.down_proj.weight");
  std::vector<Vec> out;
  for (const Vec& row : x) {
    Vec score = matvec(router, row);
    for (double& v : score) v = sigmoid(v);
    Vec key = score;
    for (std::size_t e = 0; e < key.size(); ++e) key[e] += bias.v[e];
    std::vector<std::size_t> chosen = route_next_grouped(key, k, n_groups, topk_groups);
    std::sort(chosen.begin(), chosen.end());  // index_add_ over the experts in index order
    double sum = 0.0;
    for (std::size_t e : chosen) sum += score[e];
    Vec y(row.size(), 0.0);
    for (std::size_t e : chosen) {
      const double w = (*norm ? score[e] / (sum + 1e-20) : score[e]) * scale;
      const Vec m = relu2(up[e], down[e], row);
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += w * m[i];
    }
    const Vec s = relu2(shared_up, shared_down, row);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += s[i];
    out.push_back(std::move(y));
  }
  return out;
}

}  // namespace

std::vector<Vec> forward_nemotron_h(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const std::string pattern = *ck.config().get_string("hybrid_override_pattern");
  const double eps = cfg(ck, "layer_norm_epsilon", 1e-5);
  Mamba2Geometry g;
  g.n_heads = static_cast<std::int64_t>(cfg(ck, "mamba_num_heads", 128));
  g.head_dim = static_cast<std::int64_t>(cfg(ck, "mamba_head_dim", 64));
  g.d_state = static_cast<std::int64_t>(cfg(ck, "ssm_state_size", 128));
  g.n_groups = static_cast<std::int64_t>(cfg(ck, "n_groups", 8));
  g.kernel = static_cast<std::int64_t>(cfg(ck, "conv_kernel", 4));
  g.eps = eps;
  auto conv_bias = ck.config().get_bool("use_conv_bias", true);
  RECUR_CHECK(conv_bias.is_ok());
  g.conv_bias = *conv_bias;
  if (ck.config().has("time_step_limit")) {
    auto lim = *ck.config().get_floats("time_step_limit");
    g.dt_min = lim[0], g.dt_max = lim[1];
  }
  const Tensor embed = load(ck, "backbone.embeddings.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  for (std::size_t l = 0; l < pattern.size(); ++l) {
    const std::string p = "backbone.layers." + std::to_string(l) + ".";
    const Tensor wn = load(ck, p + "norm.weight");
    std::vector<Vec> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = rms_norm(h[t], wn.v, eps, false);
    const std::vector<Vec> y = pattern[l] == 'M'   ? mamba2_mixer(ck, p + "mixer.", g, x)
                               : pattern[l] == '*' ? attention(ck, p + "mixer.", x)
                               : pattern[l] == 'E' ? moe(ck, p + "mixer.", x)
                                                   : relu2_mlp(ck, p + "mixer.", x);
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += y[t][i];
    }
  }
  check_routes_consumed();
  const Tensor wf = load(ck, "backbone.norm_f.weight");
  for (Vec& row : h) row = rms_norm(row, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
