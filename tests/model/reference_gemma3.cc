// Reference Gemma 3 text forward (docs/model-gemma3.md, from transformers'
// modeling_gemma3.py / configuration_gemma3.py), float64: whole sequence at once, an explicit
// sliding-window mask instead of a ring.
#include <cmath>

#include "kernels/dtype.h"
#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

// Gemma3RMSNorm: x / sqrt(mean(x²) + eps) · (1 + w).
Vec norm(const Vec& x, const Tensor& w, double eps) { return rms_norm(x, w.v, eps, true); }

// torch gelu(approximate="tanh").
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// Query t sees keys s with s <= t and, when window > 0, s > t - window (transformers'
// sliding_window_overlay: kv_idx > q_idx - sliding_window).
std::vector<Vec> attention(const std::vector<Vec>& q, const std::vector<Vec>& k,
                           const std::vector<Vec>& v, std::int64_t n_heads, std::int64_t n_kv,
                           std::int64_t hd, double scale, std::int64_t window) {
  const auto T = static_cast<std::int64_t>(q.size());
  std::vector<Vec> out(q.size(), Vec(static_cast<std::size_t>(n_heads * hd), 0.0));
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0;
    for (std::int64_t h = 0; h < n_heads; ++h) {
      const std::int64_t kh = h / (n_heads / n_kv);
      Vec p;
      double mx = -1e300;
      for (std::int64_t s = first; s <= t; ++s) {
        double dot = 0.0;
        for (std::int64_t d = 0; d < hd; ++d) {
          dot += q[static_cast<std::size_t>(t)][static_cast<std::size_t>(h * hd + d)] *
                 k[static_cast<std::size_t>(s)][static_cast<std::size_t>(kh * hd + d)];
        }
        p.push_back(dot * scale);
        mx = std::max(mx, p.back());
      }
      double sum = 0.0;
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (std::int64_t s = first; s <= t; ++s) {
        const double w = p[static_cast<std::size_t>(s - first)] / sum;
        for (std::int64_t d = 0; d < hd; ++d) {
          out[static_cast<std::size_t>(t)][static_cast<std::size_t>(h * hd + d)] +=
              w * v[static_cast<std::size_t>(s)][static_cast<std::size_t>(kh * hd + d)];
        }
      }
    }
  }
  return out;
}

// Default RoPE of base theta on positions divided by `factor` (rope_type "linear").
void rope_scaled(double* head, std::int64_t hd, std::int64_t pos, double theta, double factor) {
  const std::int64_t half = hd / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) / factor *
                         std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = b * c + a * s;
  }
}

}  // namespace

std::vector<Vec> forward_gemma3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 0));
  const auto window = static_cast<std::int64_t>(cfg(ck, "sliding_window", 0));
  const double eps = cfg(ck, "rms_norm_eps", 1e-6);
  const double theta_global = cfg(ck, "rope_theta", 1e6);
  const double theta_local = cfg(ck, "rope_local_base_freq", 1e4);
  const double factor = cfg(ck, "rope_scaling.factor", 1.0);
  const double scale = 1.0 / std::sqrt(cfg(ck, "query_pre_attn_scalar", 0));
  const double softcap = cfg(ck, "final_logit_softcapping", 0.0);
  // layer_types, else HF's default from sliding_window_pattern: global iff (i + 1) % pattern == 0.
  std::vector<std::string> types;
  if (ck.config().has("layer_types")) {
    types = *ck.config().get_strings("layer_types");
  } else {
    const auto pattern = static_cast<int>(cfg(ck, "sliding_window_pattern", 6));
    for (int i = 0; i < L; ++i) {
      types.emplace_back((i + 1) % pattern == 0 ? "full_attention" : "sliding_attention");
    }
  }
  const std::string root = "model.";
  const Tensor embed = load(ck, root + "embed_tokens.weight");
  // The normalizer sqrt(hidden) is cast to the embedding's dtype (bf16: 33.94 -> 34).
  const auto d = static_cast<std::size_t>(embed.cols());
  double normalizer = static_cast<float>(std::sqrt(static_cast<double>(d)));
  if (ck.find(root + "embed_tokens.weight")->dtype == DType::kBF16) {
    normalizer = kernels::round_to_bf16(static_cast<float>(normalizer));
  }
  const std::size_t T = tokens.size();
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < d; ++i) {
      h[t].push_back(embed.v[static_cast<std::size_t>(tokens[t]) * d + i] * normalizer);
    }
  }
  for (int l = 0; l < L; ++l) {
    const bool sliding = types[static_cast<std::size_t>(l)] == "sliding_attention";
    const std::string p = root + "layers." + std::to_string(l) + ".";
    const Tensor w_in = load(ck, p + "input_layernorm.weight");
    const Tensor wq = load(ck, p + "self_attn.q_proj.weight");
    const Tensor wk = load(ck, p + "self_attn.k_proj.weight");
    const Tensor wv = load(ck, p + "self_attn.v_proj.weight");
    const Tensor wo = load(ck, p + "self_attn.o_proj.weight");
    const Tensor qn = load(ck, p + "self_attn.q_norm.weight");
    const Tensor kn = load(ck, p + "self_attn.k_norm.weight");
    std::vector<Vec> q(T), k(T), v(T);
    for (std::size_t t = 0; t < T; ++t) {
      const Vec x = norm(h[t], w_in, eps);
      q[t] = matvec(wq, x);
      k[t] = matvec(wk, x);
      v[t] = matvec(wv, x);
      for (std::int64_t hh = 0; hh < H + Hkv; ++hh) {
        Vec& dst = hh < H ? q[t] : k[t];
        const std::int64_t j = hh < H ? hh : hh - H;
        Vec head(dst.begin() + j * hd, dst.begin() + (j + 1) * hd);
        head = norm(head, hh < H ? qn : kn, eps);
        if (sliding) {
          rope_scaled(head.data(), hd, static_cast<std::int64_t>(t), theta_local, 1.0);
        } else {
          rope_scaled(head.data(), hd, static_cast<std::int64_t>(t), theta_global, factor);
        }
        std::copy(head.begin(), head.end(), dst.begin() + j * hd);
      }
    }
    round_like_kv_cache(ck, &k, &v);
    const std::vector<Vec> att = attention(q, k, v, H, Hkv, hd, scale, sliding ? window : 0);
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    const Tensor w_pre_ff = load(ck, p + "pre_feedforward_layernorm.weight");
    const Tensor w_post_ff = load(ck, p + "post_feedforward_layernorm.weight");
    const Tensor wg = load(ck, p + "mlp.gate_proj.weight"), wu = load(ck, p + "mlp.up_proj.weight");
    const Tensor wd = load(ck, p + "mlp.down_proj.weight");
    for (std::size_t t = 0; t < T; ++t) {
      const Vec o = norm(matvec(wo, att[t]), w_post, eps);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i];
      const Vec x = norm(h[t], w_pre_ff, eps);
      Vec g = matvec(wg, x);
      const Vec u = matvec(wu, x);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = gelu_tanh(g[i]) * u[i];
      const Vec m = norm(matvec(wd, g), w_post_ff, eps);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  const Tensor wf = load(ck, root + "norm.weight");
  auto tied = ck.config().get_bool("tie_word_embeddings", true);  // Gemma3TextConfig's default
  RECUR_CHECK(tied.is_ok());
  const Tensor head = *tied ? embed : load(ck, "lm_head.weight");
  std::vector<Vec> out;
  for (Vec& x : h) {
    Vec logits = matvec(head, norm(x, wf, eps));
    if (softcap > 0.0) {
      for (double& z : logits) z = softcap * std::tanh(z / softcap);
    }
    out.push_back(std::move(logits));
  }
  return out;
}

}  // namespace recur::model::reference
