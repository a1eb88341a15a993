// Reference Qwen3 forward (spec 1.3), float64.
#include <cmath>

#include "reference.h"

namespace recur::model::reference {

std::vector<Vec> forward_qwen3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 0));
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
    const Tensor wq = load(ck, p + "self_attn.q_proj.weight"),
                 wk = load(ck, p + "self_attn.k_proj.weight");
    const Tensor wv = load(ck, p + "self_attn.v_proj.weight"),
                 wo = load(ck, p + "self_attn.o_proj.weight");
    const Tensor qn = load(ck, p + "self_attn.q_norm.weight"),
                 kn = load(ck, p + "self_attn.k_norm.weight");
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
    const Tensor wg = load(ck, p + "mlp.gate_proj.weight"), wu = load(ck, p + "mlp.up_proj.weight");
    const Tensor wd = load(ck, p + "mlp.down_proj.weight");
    for (std::size_t t = 0; t < T; ++t) {
      const Vec o = matvec(wo, att[t]);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i];
      const Vec x = rms_norm(h[t], w_post.v, eps, false);
      Vec g = matvec(wg, x);
      const Vec u = matvec(wu, x);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec m = matvec(wd, g);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  const Tensor wf = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
