// Reference Qwen3-MoE forward (docs/model-qwen3-moe.md), float64: Qwen3's attention, then on
// sparse layers softmax over the router logits, the top num_experts_per_tok (lower index first on
// equal probabilities), renormalised when norm_topk_prob, and the weighted sum of those experts'
// SwiGLUs; dense layers run the intermediate_size MLP.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

Vec swiglu_mlp(const Tensor& wg, const Tensor& wu, const Tensor& wd, const Vec& x) {
  Vec g = matvec(wg, x);
  const Vec u = matvec(wu, x);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
  return matvec(wd, g);
}

bool sparse_layer(const Checkpoint& ck, int layer, std::int64_t n_experts) {
  auto only = ck.config().get_int_list("mlp_only_layers");
  RECUR_CHECK(only.is_ok());
  const auto step = static_cast<int>(cfg(ck, "decoder_sparse_step", 1));
  return n_experts > 0 && (layer + 1) % step == 0 &&
         std::find(only->begin(), only->end(), layer) == only->end();
}

}  // namespace

std::vector<Vec> forward_qwen3_moe(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 0));
  const auto E = static_cast<std::int64_t>(cfg(ck, "num_experts", 0));
  const auto K = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 0));
  auto norm_topk = ck.config().get_bool("norm_topk_prob", false);
  RECUR_CHECK(norm_topk.is_ok());
  const double eps = cfg(ck, "rms_norm_eps", 1e-6);
  const double theta = cfg(ck, "rope_theta", 1e6);
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
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    const Tensor wq = load(ck, p + "self_attn.q_proj.weight");
    const Tensor wk = load(ck, p + "self_attn.k_proj.weight");
    const Tensor wv = load(ck, p + "self_attn.v_proj.weight");
    const Tensor wo = load(ck, p + "self_attn.o_proj.weight");
    const Tensor qn = load(ck, p + "self_attn.q_norm.weight");
    const Tensor kn = load(ck, p + "self_attn.k_norm.weight");
    std::vector<Vec> q(T), k(T), v(T);
    for (std::size_t t = 0; t < T; ++t) {
      const Vec x = rms_norm(h[t], w_in.v, eps, false);
      q[t] = matvec(wq, x);
      k[t] = matvec(wk, x);
      v[t] = matvec(wv, x);
      for (std::int64_t hh = 0; hh < H + Hkv; ++hh) {
        Vec& dst = hh < H ? q[t] : k[t];
        const std::int64_t j = hh < H ? hh : hh - H;
        Vec head(dst.begin() + j * hd, dst.begin() + (j + 1) * hd);
        head = rms_norm(head, (hh < H ? qn : kn).v, eps, false);
        rope(head.data(), hd, static_cast<std::int64_t>(t), theta);
        std::copy(head.begin(), head.end(), dst.begin() + j * hd);
      }
    }
    round_like_kv_cache(ck, &k, &v);
    const std::vector<Vec> att = causal_attention(q, k, v, H, Hkv, hd);
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    const bool sparse = sparse_layer(ck, l, E);
    std::vector<Tensor> wg, wu, wd;
    Tensor router;
    if (sparse) {
      router = load(ck, p + "mlp.gate.weight");
      for (std::int64_t e = 0; e < E; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        wg.push_back(load(ck, x + "gate_proj.weight"));
        wu.push_back(load(ck, x + "up_proj.weight"));
        wd.push_back(load(ck, x + "down_proj.weight"));
      }
    } else {
      wg.push_back(load(ck, p + "mlp.gate_proj.weight"));
      wu.push_back(load(ck, p + "mlp.up_proj.weight"));
      wd.push_back(load(ck, p + "mlp.down_proj.weight"));
    }
    for (std::size_t t = 0; t < T; ++t) {
      const Vec o = matvec(wo, att[t]);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i];
      const Vec x = rms_norm(h[t], w_post.v, eps, false);
      if (!sparse) {
        const Vec m = swiglu_mlp(wg[0], wu[0], wd[0], x);
        for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
        continue;
      }
      Vec prob = matvec(router, x);
      const double mx = *std::max_element(prob.begin(), prob.end());
      double sum = 0.0;
      for (double& z : prob) sum += (z = std::exp(z - mx));
      for (double& z : prob) z /= sum;
      std::vector<std::size_t> order(prob.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return prob[a] > prob[b]; });
      double chosen = 0.0;
      for (std::size_t j = 0; j < K; ++j) chosen += prob[order[j]];
      for (std::size_t j = 0; j < K; ++j) {
        const std::size_t e = order[j];
        const double w = *norm_topk ? prob[e] / chosen : prob[e];
        const Vec m = swiglu_mlp(wg[e], wu[e], wd[e], x);
        for (std::size_t i = 0; i < d; ++i) h[t][i] += w * m[i];
      }
    }
  }
  const Tensor wf = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
