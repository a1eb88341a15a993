// Reference Qwen3.5 forward (spec 2.4, 2.5, 2.7), float64: zero-centred norms, output-gated
// attention with partial RoPE, Gated DeltaNet by the per-token recurrence.
#include <cmath>

#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

using Geo = Qwen35Geometry;

// Gated attention (spec 2.4) for all positions; returns o_proj output per position.
std::vector<Vec> qwen3_5_gated_attention(const Checkpoint& ck, const std::string& p, const Geo& g,
                                         const std::vector<Vec>& x) {
  const Tensor wq = load(ck, p + "self_attn.q_proj.weight"),
               wk = load(ck, p + "self_attn.k_proj.weight");
  const Tensor wv = load(ck, p + "self_attn.v_proj.weight"),
               wo = load(ck, p + "self_attn.o_proj.weight");
  const Tensor qn = load(ck, p + "self_attn.q_norm.weight"),
               kn = load(ck, p + "self_attn.k_norm.weight");
  const std::size_t T = x.size();
  std::vector<Vec> q(T, Vec(static_cast<std::size_t>(g.H * g.hd))), gate = q, k(T), v(T);
  for (std::size_t t = 0; t < T; ++t) {
    const Vec qg = matvec(wq, x[t]);  // per head [q (hd) | gate (hd)]
    for (std::int64_t h = 0; h < g.H; ++h) {
      Vec head(qg.begin() + 2 * h * g.hd, qg.begin() + (2 * h + 1) * g.hd);
      head = rms_norm(head, qn.v, g.eps, true);
      rope(head.data(), g.rot, static_cast<std::int64_t>(t), g.theta);
      std::copy(head.begin(), head.end(), q[t].begin() + h * g.hd);
      std::copy(qg.begin() + (2 * h + 1) * g.hd, qg.begin() + (2 * h + 2) * g.hd,
                gate[t].begin() + h * g.hd);
    }
    k[t] = matvec(wk, x[t]);
    v[t] = matvec(wv, x[t]);
    for (std::int64_t h = 0; h < g.Hkv; ++h) {
      Vec head(k[t].begin() + h * g.hd, k[t].begin() + (h + 1) * g.hd);
      head = rms_norm(head, kn.v, g.eps, true);
      rope(head.data(), g.rot, static_cast<std::int64_t>(t), g.theta);
      std::copy(head.begin(), head.end(), k[t].begin() + h * g.hd);
    }
  }
  round_like_kv_cache(ck, &k, &v);
  std::vector<Vec> att = causal_attention(q, k, v, g.H, g.Hkv, g.hd);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < att[t].size(); ++i) att[t][i] *= sigmoid(gate[t][i]);
    att[t] = matvec(wo, att[t]);
  }
  return att;
}

namespace {

void l2norm(double* x, std::int64_t n, double scale) {
  double ss = 0.0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss + 1e-6);
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inv * scale;
}

}  // namespace

GdnProjections qwen3_5_gdn_projections(const Checkpoint& ck, const std::string& p,
                                       const std::vector<Vec>& x) {
  const std::string a = p + "linear_attn.";
  const Tensor wqkv = load(ck, a + "in_proj_qkv.weight"), wz = load(ck, a + "in_proj_z.weight");
  const Tensor wb = load(ck, a + "in_proj_b.weight"), wa = load(ck, a + "in_proj_a.weight");
  GdnProjections out;
  for (const Vec& xt : x) {
    out.mixed.push_back(matvec(wqkv, xt));
    out.z.push_back(matvec(wz, xt));
    out.b.push_back(matvec(wb, xt));
    out.a.push_back(matvec(wa, xt));
  }
  return out;
}

// Gated DeltaNet (spec 2.5) for all positions; returns out_proj output per position.
std::vector<Vec> qwen3_5_gated_delta(const Checkpoint& ck, const std::string& p, const Geo& g,
                                     const GdnProjections& proj) {
  const std::string a = p + "linear_attn.";
  const Tensor conv = load(ck, a + "conv1d.weight"), dt_bias = load(ck, a + "dt_bias");
  const Tensor a_log = load(ck, a + "A_log"), norm = load(ck, a + "norm.weight");
  const Tensor wout = load(ck, a + "out_proj.weight");
  const std::size_t T = proj.mixed.size();
  const std::int64_t cd = 2 * g.Hk * g.Dk + g.Hv * g.Dv;
  const std::vector<Vec>& mixed = proj.mixed;
  std::vector<Vec> S(static_cast<std::size_t>(g.Hv),
                     Vec(static_cast<std::size_t>(g.Dk * g.Dv), 0.0));
  std::vector<Vec> out(T);
  for (std::size_t t = 0; t < T; ++t) {
    Vec c(static_cast<std::size_t>(cd), 0.0);
    for (std::int64_t ch = 0; ch < cd; ++ch) {
      double s = 0.0;
      for (std::int64_t j = 0; j < g.K; ++j) {
        const std::int64_t tau = static_cast<std::int64_t>(t) - g.K + 1 + j;
        if (tau >= 0)
          s += conv.v[static_cast<std::size_t>(ch * g.K + j)] *
               mixed[static_cast<std::size_t>(tau)][static_cast<std::size_t>(ch)];
      }
      c[static_cast<std::size_t>(ch)] = silu(s);
    }
    double* q = c.data();
    double* k = c.data() + g.Hk * g.Dk;
    const double* v = c.data() + 2 * g.Hk * g.Dk;
    for (std::int64_t h = 0; h < g.Hk; ++h) {
      l2norm(q + h * g.Dk, g.Dk, 1.0 / std::sqrt(static_cast<double>(g.Dk)));
      l2norm(k + h * g.Dk, g.Dk, 1.0);
    }
    const Vec &z = proj.z[t], &b = proj.b[t], &av = proj.a[t];
    Vec o_all;
    for (std::int64_t j = 0; j < g.Hv; ++j) {
      const std::int64_t kh = j / (g.Hv / g.Hk);
      const double beta = sigmoid(b[static_cast<std::size_t>(j)]);
      const double gl =
          -std::exp(a_log.v[static_cast<std::size_t>(j)]) *
          softplus(av[static_cast<std::size_t>(j)] + dt_bias.v[static_cast<std::size_t>(j)]);
      Vec& Sj = S[static_cast<std::size_t>(j)];  // [Dk][Dv]
      for (double& s : Sj) s *= std::exp(gl);
      const double* kk = k + kh * g.Dk;
      const double* qq = q + kh * g.Dk;
      Vec u(static_cast<std::size_t>(g.Dv));
      for (std::int64_t e = 0; e < g.Dv; ++e) {
        double sk = 0.0;
        for (std::int64_t dd = 0; dd < g.Dk; ++dd)
          sk += Sj[static_cast<std::size_t>(dd * g.Dv + e)] * kk[dd];
        u[static_cast<std::size_t>(e)] = beta * (v[j * g.Dv + e] - sk);
      }
      for (std::int64_t dd = 0; dd < g.Dk; ++dd) {
        for (std::int64_t e = 0; e < g.Dv; ++e)
          Sj[static_cast<std::size_t>(dd * g.Dv + e)] += kk[dd] * u[static_cast<std::size_t>(e)];
      }
      Vec o(static_cast<std::size_t>(g.Dv), 0.0);
      for (std::int64_t e = 0; e < g.Dv; ++e) {
        for (std::int64_t dd = 0; dd < g.Dk; ++dd)
          o[static_cast<std::size_t>(e)] += Sj[static_cast<std::size_t>(dd * g.Dv + e)] * qq[dd];
      }
      o = rms_norm(o, norm.v, g.eps, false);  // norm then gate, plain weight
      for (std::int64_t e = 0; e < g.Dv; ++e)
        o[static_cast<std::size_t>(e)] *= silu(z[static_cast<std::size_t>(j * g.Dv + e)]);
      o_all.insert(o_all.end(), o.begin(), o.end());
    }
    out[t] = matvec(wout, o_all);
  }
  return out;
}

Qwen35Geometry qwen3_5_geometry(const Checkpoint& ck) {
  Geo g{};
  g.H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  g.Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 0));
  g.hd = static_cast<std::int64_t>(cfg(ck, "head_dim", 0));
  const double factor =
      cfg(ck, "rope_parameters.partial_rotary_factor", cfg(ck, "partial_rotary_factor", 0.25));
  g.rot = static_cast<std::int64_t>(static_cast<double>(g.hd) * factor);
  g.Hk = static_cast<std::int64_t>(cfg(ck, "linear_num_key_heads", 0));
  g.Hv = static_cast<std::int64_t>(cfg(ck, "linear_num_value_heads", 0));
  g.Dk = static_cast<std::int64_t>(cfg(ck, "linear_key_head_dim", 0));
  g.Dv = static_cast<std::int64_t>(cfg(ck, "linear_value_head_dim", 0));
  g.K = static_cast<std::int64_t>(cfg(ck, "linear_conv_kernel_dim", 4));
  g.eps = cfg(ck, "rms_norm_eps", 1e-6);
  g.theta = cfg(ck, "rope_parameters.rope_theta", cfg(ck, "rope_theta", 1e7));
  return g;
}

std::vector<Vec> forward_qwen3_5(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const std::string pre =
      ck.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
  const Geo g = qwen3_5_geometry(ck);
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const auto interval = static_cast<int>(cfg(ck, "full_attention_interval", 4));
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
    const std::vector<Vec> mix =
        full ? qwen3_5_gated_attention(ck, p, g, x)
             : qwen3_5_gated_delta(ck, p, g, qwen3_5_gdn_projections(ck, p, x));
    const Tensor w_post = load(ck, p + "post_attention_layernorm.weight");
    const Tensor wg = load(ck, p + "mlp.gate_proj.weight"), wu = load(ck, p + "mlp.up_proj.weight");
    const Tensor wd = load(ck, p + "mlp.down_proj.weight");
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += mix[t][i];
      const Vec xn = rms_norm(h[t], w_post.v, g.eps, true);
      Vec gg = matvec(wg, xn);
      const Vec u = matvec(wu, xn);
      for (std::size_t i = 0; i < gg.size(); ++i) gg[i] = silu(gg[i]) * u[i];
      const Vec m = matvec(wd, gg);
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  const Tensor wf = load(ck, pre + "norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, g.eps, true);
  return head_logits(ck, h, embed);
}

}  // namespace recur::model::reference
