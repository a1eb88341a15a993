// Reference Llama forward (docs/model-llama.md, from transformers' modeling_llama.py and
// modeling_rope_utils.py), float64.
#include <cmath>
#include <numbers>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

bool flag(const Checkpoint& ck, const std::string& key) {
  auto v = ck.config().get_bool(key, false);
  RECUR_CHECK_MSG(v.is_ok(), key.c_str());
  return *v;
}

// _compute_default_rope_parameters, then _compute_llama3_parameters when rope_scaling asks.
Vec inv_freq(const Checkpoint& ck, std::int64_t head_dim) {
  const double theta = cfg(ck, "rope_theta", 10000.0);
  Vec f(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < f.size(); ++i) {
    f[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
  }
  auto type = ck.config().get_string("rope_scaling.rope_type");
  if (!type.is_ok() || *type != "llama3") return f;
  const double factor = cfg(ck, "rope_scaling.factor", 0.0);
  const double low = cfg(ck, "rope_scaling.low_freq_factor", 0.0);
  const double high = cfg(ck, "rope_scaling.high_freq_factor", 0.0);
  const double old_len = cfg(ck, "rope_scaling.original_max_position_embeddings", 0.0);
  for (double& x : f) {
    const double wavelen = 2.0 * std::numbers::pi / x;
    const double llama = wavelen > old_len / low ? x / factor : x;
    const double smooth = (old_len / wavelen - low) / (high - low);
    const bool medium = !(wavelen < old_len / high) && !(wavelen > old_len / low);
    x = medium ? (1.0 - smooth) * llama / factor + smooth * llama : llama;
  }
  return f;
}

// rotate_half RoPE of one head at position pos: x·cos + rotate_half(x)·sin.
void rope_head(double* head, const Vec& freq, std::int64_t pos) {
  const std::size_t half = freq.size();
  for (std::size_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) * freq[i];
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = b * c + a * s;
  }
}

// nn.Linear: W x (+ b when the checkpoint has the bias).
Vec linear(const Checkpoint& ck, const std::string& name, const Vec& x, bool bias) {
  Vec y = matvec(load(ck, name + ".weight"), x);
  if (bias) {
    const Tensor b = load(ck, name + ".bias");
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += b.v[i];
  }
  return y;
}

}  // namespace

std::vector<Vec> forward_llama(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", H));
  const auto hidden = static_cast<std::int64_t>(cfg(ck, "hidden_size", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", static_cast<double>(hidden / H)));
  const double eps = cfg(ck, "rms_norm_eps", 1e-6);
  const bool attn_bias = flag(ck, "attention_bias"), mlp_bias = flag(ck, "mlp_bias");
  const Vec freq = inv_freq(ck, hd);
  const Tensor embed = load(ck, "model.embed_tokens.weight");
  const std::size_t T = tokens.size();
  const auto d = static_cast<std::size_t>(hidden);
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    std::vector<Vec> q(T), k(T), v(T);
    for (std::size_t t = 0; t < T; ++t) {
      const Vec x = rms_norm(h[t], w_in.v, eps, false);
      q[t] = linear(ck, p + "self_attn.q_proj", x, attn_bias);
      k[t] = linear(ck, p + "self_attn.k_proj", x, attn_bias);
      v[t] = linear(ck, p + "self_attn.v_proj", x, attn_bias);
      for (std::int64_t j = 0; j < H; ++j) rope_head(q[t].data() + j * hd, freq, std::int64_t(t));
      for (std::int64_t j = 0; j < Hkv; ++j) rope_head(k[t].data() + j * hd, freq, std::int64_t(t));
    }
    round_like_kv_cache(ck, &k, &v);
    const std::vector<Vec> att = causal_attention(q, k, v, H, Hkv, hd);
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    for (std::size_t t = 0; t < T; ++t) {
      const Vec o = linear(ck, p + "self_attn.o_proj", att[t], attn_bias);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i];
      const Vec x = rms_norm(h[t], w_post.v, eps, false);
      Vec g = linear(ck, p + "mlp.gate_proj", x, mlp_bias);
      const Vec u = linear(ck, p + "mlp.up_proj", x, mlp_bias);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec m = linear(ck, p + "mlp.down_proj", g, mlp_bias);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  const Tensor wf = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
