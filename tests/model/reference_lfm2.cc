// Reference LFM2 forward (docs/model-lfm2.md, from transformers' modeling_lfm2.py:
// Lfm2ShortConv's slow_forward, Lfm2Attention, Lfm2MLP, Lfm2DecoderLayer), float64, whole sequence
// at once. A layer is attention when the checkpoint holds its self_attn tensors (the loader derives
// the same schedule from config.json and refuses a checkpoint that disagrees). LFM2-MoE (lfm2_moe,
// modeling_lfm2_moe.py's Lfm2MoeSparseMoeBlock) from num_dense_layers on: sigmoid(router · x),
// the top num_experts_per_tok of sigmoid + expert_bias (lower index first on equal keys), their
// unbiased scores / (sum + 1e-6) when norm_topk_prob, times routed_scaling_factor, weighting the
// experts' SwiGLUs (w1 gate, w3 up, w2 down).
#include <algorithm>
#include <cmath>

#include "kernels/dtype.h"
#include "reference.h"
#include "util/check.h"

namespace recur::model::reference {

namespace {

ShortConvRounding g_rounding;

double round_as(double v, Rounding r) {
  switch (r) {
    case Rounding::kF64:
      return v;
    case Rounding::kF32:
      return static_cast<float>(v);
    case Rounding::kBf16:
      return kernels::round_to_bf16(static_cast<float>(v));
  }
  return v;
}

Vec add_bias(Vec y, const Checkpoint& ck, const std::string& name) {
  if (ck.find(name) == nullptr) return y;
  const Tensor b = load(ck, name);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += b.v[i];
  return y;
}

// conv_out[t][c] = Σ_j w[c][0][j] · (B ⊙ x)[t - (K-1) + j][c], zero before the first token; the
// output is gated by C, then out_proj.
std::vector<Vec> short_conv(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x) {
  const Tensor in = load(ck, p + "conv.in_proj.weight");
  const Tensor conv = load(ck, p + "conv.conv.weight");  // [d, 1, K]
  const Tensor out = load(ck, p + "conv.out_proj.weight");
  const std::size_t T = x.size(), d = static_cast<std::size_t>(out.rows());
  const auto K = static_cast<std::size_t>(conv.shape.back());
  std::vector<Vec> bx(T, Vec(d)), gate(T, Vec(d));
  for (std::size_t t = 0; t < T; ++t) {
    Vec bcx = add_bias(matvec(in, x[t]), ck, p + "conv.in_proj.bias");
    for (double& v : bcx) v = round_as(v, g_rounding.in_proj);
    for (std::size_t c = 0; c < d; ++c) {
      bx[t][c] = round_as(bcx[c] * bcx[2 * d + c], g_rounding.bx);
      gate[t][c] = bcx[d + c];
    }
  }
  const bool conv_bias = ck.find(p + "conv.conv.bias") != nullptr;
  const Tensor cb = conv_bias ? load(ck, p + "conv.conv.bias") : Tensor{};
  std::vector<Vec> y(T);
  for (std::size_t t = 0; t < T; ++t) {
    Vec g(d);
    for (std::size_t c = 0; c < d; ++c) {
      double s = conv_bias ? cb.v[c] : 0.0;
      float s32 = 0.0f;  // Rounding::kF32: the taps summed in float, then the bias (the engine's)
      for (std::size_t j = 0; j < K; ++j) {
        const std::ptrdiff_t src =
            static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(K - 1);
        if (src < 0) continue;
        const double tap = conv.v[c * K + j] * bx[static_cast<std::size_t>(src)][c];
        s += tap;
        s32 += static_cast<float>(tap);
      }
      if (g_rounding.conv == Rounding::kF32) {
        s = s32 + (conv_bias ? static_cast<float>(cb.v[c]) : 0.0f);
      }
      g[c] = round_as(round_as(s, g_rounding.conv) * gate[t][c], g_rounding.gated);
    }
    y[t] = add_bias(matvec(out, g), ck, p + "conv.out_proj.bias");
  }
  return y;
}

std::vector<Vec> attention(const Checkpoint& ck, const std::string& p, const std::vector<Vec>& x,
                           double eps) {
  const auto H = static_cast<std::int64_t>(cfg(ck, "num_attention_heads", 0));
  const auto Hkv = static_cast<std::int64_t>(cfg(ck, "num_key_value_heads", 8));
  const Tensor wq = load(ck, p + "self_attn.q_proj.weight");
  const Tensor wk = load(ck, p + "self_attn.k_proj.weight");
  const Tensor wv = load(ck, p + "self_attn.v_proj.weight");
  const Tensor wo = load(ck, p + "self_attn.out_proj.weight");
  const Tensor qn = load(ck, p + "self_attn.q_layernorm.weight");
  const Tensor kn = load(ck, p + "self_attn.k_layernorm.weight");
  const std::int64_t hd = wq.rows() / H;
  const double theta = cfg(ck, "rope_parameters.rope_theta", cfg(ck, "rope_theta", 1e6));
  const std::size_t T = x.size();
  std::vector<Vec> q(T), k(T), v(T);
  auto norm_rope = [&](Vec& rows, const Tensor& w, std::int64_t heads, std::int64_t pos) {
    for (std::int64_t h = 0; h < heads; ++h) {
      Vec head(rows.begin() + h * hd, rows.begin() + (h + 1) * hd);
      head = rms_norm(head, w.v, eps, false);
      rope(head.data(), hd, pos, theta);
      std::copy(head.begin(), head.end(), rows.begin() + h * hd);
    }
  };
  for (std::size_t t = 0; t < T; ++t) {
    q[t] = matvec(wq, x[t]);
    k[t] = matvec(wk, x[t]);
    v[t] = matvec(wv, x[t]);
    norm_rope(q[t], qn, H, static_cast<std::int64_t>(t));
    norm_rope(k[t], kn, Hkv, static_cast<std::int64_t>(t));
  }
  round_like_kv_cache(ck, &k, &v);
  const std::vector<Vec> att = causal_attention(q, k, v, H, Hkv, hd);
  std::vector<Vec> y(T);
  for (std::size_t t = 0; t < T; ++t) y[t] = matvec(wo, att[t]);
  return y;
}

Vec swiglu(const Tensor& w1, const Tensor& w3, const Tensor& w2, const Vec& x) {
  Vec g = matvec(w1, x);
  const Vec u = matvec(w3, x);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
  return matvec(w2, g);
}

// One layer's feed-forward: the dense SwiGLU, or Lfm2MoeSparseMoeBlock.
struct FeedForward {
  std::vector<Tensor> w1, w3, w2;  // one, or one per expert
  Tensor router, bias;
  bool sparse = false, normalize = true;
  double scale = 1.0;
  std::size_t top_k = 0;

  FeedForward(const Checkpoint& ck, const std::string& p, int layer) {
    const std::string f = p + "feed_forward.";
    sparse = ck.config().model_type() == "lfm2_moe" && layer >= cfg(ck, "num_dense_layers", 2);
    if (!sparse) {
      w1.push_back(load(ck, f + "w1.weight"));
      w3.push_back(load(ck, f + "w3.weight"));
      w2.push_back(load(ck, f + "w2.weight"));
      return;
    }
    router = load(ck, f + "gate.weight");
    if (ck.find(f + "expert_bias") != nullptr) bias = load(ck, f + "expert_bias");
    for (std::int64_t e = 0; e < router.rows(); ++e) {
      const std::string x = f + "experts." + std::to_string(e) + ".";
      w1.push_back(load(ck, x + "w1.weight"));
      w3.push_back(load(ck, x + "w3.weight"));
      w2.push_back(load(ck, x + "w2.weight"));
    }
    auto norm = ck.config().get_bool("norm_topk_prob", true);
    RECUR_CHECK(norm.is_ok());
    normalize = *norm;
    scale = cfg(ck, "routed_scaling_factor", 1.0);
    top_k = static_cast<std::size_t>(cfg(ck, "num_experts_per_tok", 4));
  }

  Vec operator()(const Vec& x) const {
    if (!sparse) return swiglu(w1[0], w3[0], w2[0], x);
    Vec score = matvec(router, x);
    for (double& s : score) s = sigmoid(s);
    Vec key = score;
    for (std::size_t e = 0; e < bias.v.size(); ++e) key[e] += bias.v[e];
    std::vector<std::size_t> chosen = route_next(key, top_k);
    std::sort(chosen.begin(), chosen.end());  // HF sums the experts in index order
    double sum = 0.0;
    for (std::size_t e : chosen) sum += score[e];
    Vec y(x.size(), 0.0);
    for (std::size_t e : chosen) {
      const double w = (normalize ? score[e] / (sum + 1e-6) : score[e]) * scale;
      const Vec m = swiglu(w1[e], w3[e], w2[e], x);
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += w * m[i];
    }
    return y;
  }
};

}  // namespace

void set_short_conv_rounding(const ShortConvRounding& r) { g_rounding = r; }

std::vector<Vec> forward_lfm2(const Checkpoint& ck, const std::vector<std::int32_t>& tokens) {
  const auto L = static_cast<int>(cfg(ck, "num_hidden_layers", 0));
  const double eps = cfg(ck, "norm_eps", 1e-5);
  const Tensor embed = load(ck, "model.embed_tokens.weight");
  const std::size_t T = tokens.size(), d = static_cast<std::size_t>(embed.cols());
  std::vector<Vec> h(T);
  for (std::size_t t = 0; t < T; ++t) {
    h[t].assign(embed.v.begin() + static_cast<std::ptrdiff_t>(tokens[t] * d),
                embed.v.begin() + static_cast<std::ptrdiff_t>((tokens[t] + 1) * d));
  }
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Tensor w_op = load(ck, p + "operator_norm.weight");
    std::vector<Vec> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = rms_norm(h[t], w_op.v, eps, false);
    const bool is_attention = ck.find(p + "self_attn.q_proj.weight") != nullptr;
    const std::vector<Vec> y = is_attention ? attention(ck, p, x, eps) : short_conv(ck, p, x);
    const Tensor w_ffn = load(ck, p + "ffn_norm.weight");
    const FeedForward ff(ck, p, l);
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t i = 0; i < d; ++i) h[t][i] += y[t][i];
      const Vec m = ff(rms_norm(h[t], w_ffn.v, eps, false));
      for (std::size_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  check_routes_consumed();
  const Tensor wf = load(ck, "model.embedding_norm.weight");
  for (Vec& x : h) x = rms_norm(x, wf.v, eps, false);
  // Lfm2Config ties the head unless tie_embedding (or tie_word_embeddings) is false; the
  // generated untied checkpoints are the ones holding lm_head.weight.
  const Tensor head = ck.find("lm_head.weight") != nullptr ? load(ck, "lm_head.weight") : embed;
  std::vector<Vec> out;
  for (const Vec& x : h) out.push_back(matvec(head, x));
  return out;
}

}  // namespace recur::model::reference
