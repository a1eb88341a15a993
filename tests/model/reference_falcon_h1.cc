// Reference Falcon-H1 forward (docs/model-falcon-h1.md, from transformers' modeling_falcon_h1.py:
// FalconH1DecoderLayer, FalconH1Mixer.torch_forward, FalconH1Attention, FalconH1MLP,
// compute_mup_vector), float64, whole sequence, the mixer's per-token recurrence written out here.
// Scalars on the input of a linear map are applied to its output (in_proj(x · s) = s · in_proj(x),
// k_proj(x) · k_m enters the scores as q · k_m): equal maths, and the engine's bf16 / int8
// rounding of matmul inputs and of cached keys then happens on the same values as here.
#include <algorithm>
#include <cmath>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

bool flag(const Checkpoint& ck, const std::string& key, bool fallback) {
  auto v = ck.config().get_bool(key, fallback);
  RECUR_CHECK_MSG(v.is_ok(), key.c_str());
  return *v;
}

Vec list(const Checkpoint& ck, const std::string& key, std::size_t n) {
  if (!ck.config().has(key)) return Vec(n, 1.0);
  auto v = ck.config().get_floats(key);
  RECUR_CHECK_MSG(v.is_ok() && v->size() == n, key.c_str());
  return *v;
}

std::size_t u(std::int64_t i) { return static_cast<std::size_t>(i); }

// FalconH1Mixer over the normed rows x, ssm_out_multiplier included.
std::vector<Vec> mixer(const Checkpoint& ck, const std::string& m, const std::vector<Vec>& x) {
  const auto hidden = static_cast<std::int64_t>(cfg(ck, "hidden_size", 0));
  const auto di = static_cast<std::int64_t>(
      cfg(ck, "mamba_d_ssm", cfg(ck, "mamba_expand", 2) * static_cast<double>(hidden)));
  const auto H = static_cast<std::int64_t>(cfg(ck, "mamba_n_heads", 128));
  const auto P = static_cast<std::int64_t>(cfg(ck, "mamba_d_head", static_cast<double>(di / H)));
  const auto N = static_cast<std::int64_t>(cfg(ck, "mamba_d_state", 256));
  const auto G = static_cast<std::int64_t>(cfg(ck, "mamba_n_groups", 1));
  const auto K = static_cast<std::int64_t>(cfg(ck, "mamba_d_conv", 4));
  const double eps = cfg(ck, "rms_norm_eps", 1e-5);
  const bool norm = flag(ck, "mamba_rms_norm", false);
  const bool before_gate = flag(ck, "mamba_norm_before_gate", true);
  const bool conv_bias = flag(ck, "mamba_conv_bias", true);
  double dt_min = 0.0, dt_max = 1e300;
  if (ck.config().has("time_step_limit")) {
    auto lim = *ck.config().get_floats("time_step_limit");
    dt_min = lim[0], dt_max = lim[1];
  }
  const std::int64_t gn = G * N, cd = di + 2 * gn, width = di + cd + H;
  // compute_mup_vector: [z | x | B | C | dt] segments times ssm_multipliers, and ssm_in.
  const Vec seg = list(ck, "ssm_multipliers", 5);
  const double s_in = cfg(ck, "ssm_in_multiplier", 1.0);
  Vec mup(u(width));
  for (std::int64_t j = 0; j < width; ++j) {
    const int k = j < di ? 0 : j < 2 * di ? 1 : j < 2 * di + gn ? 2 : j < 2 * di + 2 * gn ? 3 : 4;
    mup[u(j)] = seg[u(k)] * s_in;
  }
  const Tensor win = load(ck, m + "in_proj.weight"), conv = load(ck, m + "conv1d.weight");
  Tensor cb;
  if (conv_bias) cb = load(ck, m + "conv1d.bias");
  const Tensor dt_bias = load(ck, m + "dt_bias"), a_log = load(ck, m + "A_log");
  const Tensor D = load(ck, m + "D"), wout = load(ck, m + "out_proj.weight");
  Tensor nw;
  if (norm) nw = load(ck, m + "norm.weight");
  const double s_out = cfg(ck, "ssm_out_multiplier", 1.0);
  const std::size_t T = x.size();
  std::vector<Vec> p(T), out(T);
  for (std::size_t t = 0; t < T; ++t) {
    p[t] = matvec(win, x[t]);
    for (std::int64_t j = 0; j < width; ++j) p[t][u(j)] *= mup[u(j)];
  }
  // ssm_states [H][P][N], zero at the start of the sequence.
  std::vector<Vec> S(u(H), Vec(u(P * N), 0.0));
  for (std::size_t t = 0; t < T; ++t) {
    // Depthwise causal conv1d over x | B | C (columns di.. of the projection), bias, silu.
    Vec xbc(u(cd));
    for (std::int64_t c = 0; c < cd; ++c) {
      double s = conv_bias ? cb.v[u(c)] : 0.0;
      for (std::int64_t j = 0; j < K; ++j) {
        const std::int64_t tau = static_cast<std::int64_t>(t) - (K - 1) + j;
        if (tau >= 0) s += conv.v[u(c * K + j)] * p[u(tau)][u(di + c)];
      }
      xbc[u(c)] = silu(s);
    }
    Vec y(u(di));
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t g = h / (H / G);
      double dt = softplus(p[t][u(di + cd + h)] + dt_bias.v[u(h)]);
      dt = std::clamp(dt, dt_min, dt_max);
      const double dA = std::exp(dt * -std::exp(a_log.v[u(h)]));
      for (std::int64_t pp = 0; pp < P; ++pp) {
        const double xv = xbc[u(h * P + pp)];
        double acc = 0.0;
        for (std::int64_t n = 0; n < N; ++n) {
          double& s = S[u(h)][u(pp * N + n)];
          s = s * dA + dt * xbc[u(di + g * N + n)] * xv;
          acc += s * xbc[u(di + gn + g * N + n)];
        }
        y[u(h * P + pp)] = acc + D.v[u(h)] * xv;
      }
    }
    // FalconH1RMSNormGated (weight viewed [G, di / G], each group normalised on its own), or no
    // norm: y ⊙ silu(z).
    if (norm && !before_gate) {
      for (std::int64_t i = 0; i < di; ++i) y[u(i)] *= silu(p[t][u(i)]);
    }
    if (norm) {
      const std::int64_t gs = di / G;
      for (std::int64_t g = 0; g < G; ++g) {
        double ss = 0.0;
        for (std::int64_t i = g * gs; i < (g + 1) * gs; ++i) ss += y[u(i)] * y[u(i)];
        const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + eps);
        for (std::int64_t i = g * gs; i < (g + 1) * gs; ++i) y[u(i)] *= r * nw.v[u(i)];
      }
    }
    if (!norm || before_gate) {
      for (std::int64_t i = 0; i < di; ++i) y[u(i)] *= silu(p[t][u(i)]);
    }
    out[t] = matvec(wout, y);
    for (double& e : out[t]) e *= s_out;
  }
  return out;
}

// FalconH1Attention on x · attention_in_multiplier, keys times key_multiplier, RoPE over the
// whole head, o_proj, attention_out_multiplier.
std::vector<Vec> attention(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 32));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 8));
  const auto hidden = static_cast<std::int64_t>(cfg(ck, "hidden_size", 0));
  const auto hd = static_cast<std::int64_t>(cfg(ck, "head_dim", static_cast<double>(hidden / H)));
  const double theta = cfg(ck, "rope_theta", 10000.0);
  const double a_in = cfg(ck, "attention_in_multiplier", 1.0);
  const double km = cfg(ck, "key_multiplier", 1.0);
  const double a_out = cfg(ck, "attention_out_multiplier", 1.0);
  const Tensor wq = load(ck, p + "q_proj.weight"), wk = load(ck, p + "k_proj.weight");
  const Tensor wv = load(ck, p + "v_proj.weight"), wo = load(ck, p + "o_proj.weight");
  std::vector<Vec> q, k, v;
  for (std::size_t t = 0; t < x.size(); ++t) {
    q.push_back(matvec(wq, x[t]));
    k.push_back(matvec(wk, x[t]));
    v.push_back(matvec(wv, x[t]));
    for (double& e : v[t]) e *= a_in;
    for (std::int64_t h = 0; h < H; ++h) rope(q[t].data() + h * hd, hd, std::int64_t(t), theta);
    for (std::int64_t h = 0; h < Hkv; ++h) rope(k[t].data() + h * hd, hd, std::int64_t(t), theta);
    // q · (a · k · k_m) with q = a · W_q x: the scalars of the keys ride on the query.
    for (double& e : q[t]) e *= a_in * a_in * km;
  }
  round_like_kv_cache(ck, &k, &v);
  const std::vector<Vec> att = causal_attention(q, k, v, H, Hkv, hd);
  std::vector<Vec> out;
  for (const Vec& a : att) {
    out.push_back(matvec(wo, a));
    for (double& e : out.back()) e *= a_out;
  }
  return out;
}

}  // namespace

std::vector<Vec> forward_falcon_h1(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const double eps = cfg(ck, "rms_norm_eps", 1e-5);
  const double em = cfg(ck, "embedding_multiplier", 1.0);
  const Vec mlp_m = list(ck, "mlp_multipliers", 2);
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
    const Tensor n2 = load(ck, p + "pre_ff_layernorm.weight");
    std::vector<Vec> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = rms_norm(h[t], n1.v, eps, false);
    const std::vector<Vec> m = mixer(ck, p + "mamba.", x);
    const std::vector<Vec> a = attention(ck, p + "self_attn.", x);
    const Tensor wg = load(ck, p + "feed_forward.gate_proj.weight");
    const Tensor wu = load(ck, p + "feed_forward.up_proj.weight");
    const Tensor wd = load(ck, p + "feed_forward.down_proj.weight");
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[t][i] + a[t][i];
      const Vec y = rms_norm(h[t], n2.v, eps, false);
      const Vec g = matvec(wg, y), up = matvec(wu, y);
      Vec act(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) act[i] = up[i] * silu(g[i] * mlp_m[0]);
      const Vec o = matvec(wd, act);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += o[i] * mlp_m[1];
    }
  }
  const Tensor wf = load(ck, "model.final_layernorm.weight");
  for (Vec& row : h) row = rms_norm(row, wf.v, eps, false);
  std::vector<Vec> logits = head_logits(ck, h, embed);
  const double lm = cfg(ck, "lm_head_multiplier", 1.0);
  for (Vec& row : logits) {
    for (double& e : row) e *= lm;
  }
  return logits;
}

}  // namespace recur::model::reference
