// Reference SmolLM3 forward (docs/model-smollm3.md, from transformers' modular_smollm3.py /
// configuration_smollm3.py), float64: Llama's decoder layer whose attention skips
// apply_rotary_pos_emb on the NoPE layers (no_rope_layers[i] == 0, by default every
// no_rope_layer_interval-th layer), with the optional sliding window of
// SmolLM3Config.__post_init__.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

bool flag(const Checkpoint& ck, const std::string& key, bool fallback) {
  auto v = ck.config().get_bool(key, fallback);
  RECUR_CHECK_MSG(v.is_ok(), key.c_str());
  return *v;
}

// self.use_rope per layer: config.no_rope_layers[layer_idx], whose default (__post_init__) is
// int((i + 1) % no_rope_layer_interval != 0).
std::vector<bool> use_rope(const Checkpoint& ck, int n_layers) {
  std::vector<bool> out;
  auto list = ck.config().get_int_list("no_rope_layers");
  RECUR_CHECK(list.is_ok());
  const auto interval = static_cast<int>(cfg(ck, "no_rope_layer_interval", 4));
  for (int i = 0; i < n_layers; ++i) {
    out.push_back(list->empty() ? (i + 1) % interval != 0
                                : (*list)[static_cast<std::size_t>(i)] != 0);
  }
  return out;
}

// SmolLM3Attention's sliding_window: config.sliding_window when use_sliding_window and the
// layer's layer_types entry is sliding_attention (derived: sliding iff the window is set and the
// layer is NoPE); 0 = none.
std::vector<std::int64_t> windows(const Checkpoint& ck, const std::vector<bool>& rope) {
  std::vector<std::int64_t> out(rope.size(), 0);
  if (!flag(ck, "use_sliding_window", false)) return out;
  const auto window = static_cast<std::int64_t>(cfg(ck, "sliding_window", 0.0));
  auto types = ck.config().get_strings("layer_types");
  for (std::size_t i = 0; i < rope.size(); ++i) {
    const bool sliding =
        types.is_ok() ? (*types)[i] == "sliding_attention" : window > 0 && !rope[i];
    if (sliding) out[i] = window;
  }
  return out;
}

// rotate_half at position pos with inv_freq theta^(-2i/hd): (a, b) -> (a cos - b sin, b cos + a
// sin) for the pair (i, i + hd/2).
void rotate(double* x, std::int64_t hd, double theta, std::int64_t pos) {
  const std::int64_t half = hd / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    const double c = std::cos(static_cast<double>(pos) * f),
                 s = std::sin(static_cast<double>(pos) * f);
    const double a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

Vec proj(const Checkpoint& ck, const std::string& name, const Vec& x, bool bias) {
  Vec y = matvec(load(ck, name + ".weight"), x);
  if (bias) {
    const Tensor b = load(ck, name + ".bias");
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += b.v[i];
  }
  return y;
}

// eager_attention_forward with repeat_kv: query head j reads kv head j / (H / Hkv), scale
// hd^-0.5, causal, and with a window keys k with q - k < window.
std::vector<Vec> attend(const std::vector<Vec>& q, const std::vector<Vec>& k,
                        const std::vector<Vec>& v, std::int64_t H, std::int64_t Hkv,
                        std::int64_t hd, std::int64_t window) {
  const std::size_t T = q.size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<Vec> out(T, Vec(static_cast<std::size_t>(H * hd), 0.0));
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t first = window > 0 && t + 1 > static_cast<std::size_t>(window)
                                  ? t + 1 - static_cast<std::size_t>(window)
                                  : 0;
    for (std::int64_t j = 0; j < H; ++j) {
      const std::int64_t kv = j / (H / Hkv);
      Vec score;
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t s = first; s <= t; ++s) {
        double dot = 0.0;
        for (std::int64_t e = 0; e < hd; ++e) dot += q[t][j * hd + e] * k[s][kv * hd + e];
        score.push_back(dot * scale);
        top = std::max(top, score.back());
      }
      double sum = 0.0;
      for (double& x : score) sum += (x = std::exp(x - top));
      for (std::size_t s = first; s <= t; ++s) {
        const double p = score[s - first] / sum;
        for (std::int64_t e = 0; e < hd; ++e) out[t][j * hd + e] += p * v[s][kv * hd + e];
      }
    }
  }
  return out;
}

}  // namespace

std::vector<Vec> forward_smollm3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 36));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 16));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 4));
  const auto d = static_cast<std::int64_t>(cfg(ck, "hidden_size", 2048));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", static_cast<double>(d / H)));
  const double eps = cfg(ck, "rms_norm_eps", 1e-6);
  const double theta = cfg(ck, "rope_theta", 2e6);
  const bool attn_bias = flag(ck, "attention_bias", false), mlp_bias = flag(ck, "mlp_bias", false);
  const std::vector<bool> rope = use_rope(ck, L);
  const std::vector<std::int64_t> window = windows(ck, rope);
  const Tensor embed = load(ck, "model.embed_tokens.weight");
  const std::size_t T = tokens.size();
  const auto D = static_cast<std::size_t>(d);
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    const auto row = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(tokens[t]) * D);
    h[t].assign(embed.v.begin() + row, embed.v.begin() + row + static_cast<std::ptrdiff_t>(D));
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    std::vector<Vec> q(T), k(T), v(T);
    for (std::size_t t = 0; t < T; ++t) {
      const Vec x = rms_norm(h[t], w_in.v, eps, false);
      q[t] = proj(ck, p + "self_attn.q_proj", x, attn_bias);
      k[t] = proj(ck, p + "self_attn.k_proj", x, attn_bias);
      v[t] = proj(ck, p + "self_attn.v_proj", x, attn_bias);
      if (!rope[static_cast<std::size_t>(l)]) continue;  // NoPE: q and k as projected
      const auto pos = static_cast<std::int64_t>(t);
      for (std::int64_t j = 0; j < H; ++j) rotate(q[t].data() + j * hd, hd, theta, pos);
      for (std::int64_t j = 0; j < Hkv; ++j) rotate(k[t].data() + j * hd, hd, theta, pos);
    }
    round_like_kv_cache(ck, &k, &v);
    const std::vector<Vec> a = attend(q, k, v, H, Hkv, hd, window[static_cast<std::size_t>(l)]);
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    for (std::size_t t = 0; t < T; ++t) {
      const Vec o = proj(ck, p + "self_attn.o_proj", a[t], attn_bias);
      for (std::size_t i = 0; i < D; ++i) h[t][i] += o[i];
      const Vec x = rms_norm(h[t], w_post.v, eps, false);
      Vec g = proj(ck, p + "mlp.gate_proj", x, mlp_bias);
      const Vec u = proj(ck, p + "mlp.up_proj", x, mlp_bias);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec m = proj(ck, p + "mlp.down_proj", g, mlp_bias);
      for (std::size_t i = 0; i < D; ++i) h[t][i] += m[i];
    }
  }
  const Tensor w_final = load(ck, "model.norm.weight");
  for (Vec& x : h) x = rms_norm(x, w_final.v, eps, false);
  // SmolLM3Config's tie_word_embeddings defaults to true (the release leaves it out).
  const Tensor head = flag(ck, "tie_word_embeddings", true) ? embed : load(ck, "lm_head.weight");
  std::vector<Vec> logits;
  for (const Vec& x : h) logits.push_back(matvec(head, x));
  return logits;
}

}  // namespace recur::model::reference
