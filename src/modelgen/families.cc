// Tensor tables: the names, shapes, per-tensor dtypes and initialisations of each family's
// checkpoint for a geometry (presets.cc makes the geometries). They follow model-families.md
// sections 1.2, 2.3 and 4.2 and docs/model-<family>.md (Gemma 3, Llama, the hybrid and MoE
// families).
#include "modelgen/families.h"

#include <algorithm>
#include <cmath>

#include "modelgen/families_moe.h"

namespace recur::modelgen {

namespace {

struct TableBuilder {
  DType dtype;
  int n_layers;
  std::vector<GenTensor> out;

  void add(std::string name, std::vector<std::int64_t> shape, Init init,
           std::optional<DType> fixed = std::nullopt) {
    GenTensor t{.entry = {.name = name, .shape = std::move(shape), .dtype = fixed.value_or(dtype)},
                .init = init,
                .key = name};
    out.push_back(std::move(t));
  }
  // Input projections: N(0, 1/sqrt(fan_in)) keeps unit-variance inputs at unit variance.
  void linear(std::string name, std::int64_t rows, std::int64_t cols) {
    add(std::move(name), {rows, cols}, {.a = 0.0, .b = 1.0 / std::sqrt(double(cols))});
  }
  // Projections back into the residual stream, scaled down by sqrt(2 * layers) so the stream's
  // variance stays bounded however deep the model is.
  void out_linear(std::string name, std::int64_t rows, std::int64_t cols) {
    const double std_dev = 1.0 / std::sqrt(double(cols)) / std::sqrt(2.0 * n_layers);
    add(std::move(name), {rows, cols}, {.a = 0.0, .b = std_dev});
  }
  void plain_norm(std::string name, std::int64_t n, std::optional<DType> fixed = std::nullopt) {
    add(std::move(name), {n}, {.a = 1.0, .b = 0.02}, fixed);
  }
  void zero_centred_norm(std::string name, std::int64_t n) {
    add(std::move(name), {n}, {.a = 0.0, .b = 0.02});  // used as (1 + w)
  }
  // Tied logits are h . E^T with h of unit RMS: std 2/sqrt(d) gives logits of std ~2.
  void embedding(std::string name, std::int64_t rows, std::int64_t cols) {
    add(std::move(name), {rows, cols}, {.a = 0.0, .b = 2.0 / std::sqrt(double(cols))});
  }
};

void qwen_attention(TableBuilder& t, const Geometry& g, const std::string& p, bool gated) {
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.linear(p + "self_attn.q_proj.weight", gated ? 2 * q_rows : q_rows, d);
  t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
  t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
  t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
  if (gated) {
    t.zero_centred_norm(p + "self_attn.q_norm.weight", g.head_dim);
    t.zero_centred_norm(p + "self_attn.k_norm.weight", g.head_dim);
  } else {
    t.plain_norm(p + "self_attn.q_norm.weight", g.head_dim);
    t.plain_norm(p + "self_attn.k_norm.weight", g.head_dim);
  }
}

void qwen_mlp(TableBuilder& t, const Geometry& g, const std::string& p) {
  t.linear(p + "mlp.gate_proj.weight", g.d_ff, g.d_model);
  t.linear(p + "mlp.up_proj.weight", g.d_ff, g.d_model);
  t.out_linear(p + "mlp.down_proj.weight", g.d_model, g.d_ff);
}

// Gated DeltaNet. Decay g = -exp(A_log) * softplus(a + dt_bias): A in [0.02, 1] and dt_bias
// near -2 give per-token decays of about 0.75..0.997, so the recurrent state carries information
// over hundreds of tokens (a state bug shows instead of being forgotten at once).
void gated_delta_net(TableBuilder& t, const Geometry& g, const std::string& p) {
  const std::int64_t d = g.d_model, hv = g.lin_v_heads;
  const std::int64_t conv = g.lin_conv_dim(), v_rows = hv * g.lin_v_dim;
  t.add(p + "linear_attn.A_log", {hv}, {.kind = InitKind::kLogUniform, .a = 0.02, .b = 1.0},
        DType::kF32);
  t.add(p + "linear_attn.conv1d.weight", {conv, 1, g.conv_kernel},
        {.a = 0.0, .b = 1.0 / std::sqrt(double(g.conv_kernel))});
  t.add(p + "linear_attn.dt_bias", {hv}, {.a = -2.0, .b = 0.5});
  t.linear(p + "linear_attn.in_proj_a.weight", hv, d);
  t.linear(p + "linear_attn.in_proj_b.weight", hv, d);
  t.linear(p + "linear_attn.in_proj_qkv.weight", conv, d);
  t.linear(p + "linear_attn.in_proj_z.weight", v_rows, d);
  t.plain_norm(p + "linear_attn.norm.weight", g.lin_v_dim, DType::kF32);
  t.out_linear(p + "linear_attn.out_proj.weight", d, v_rows);
}

std::vector<GenTensor> qwen3_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  t.embedding("model.embed_tokens.weight", g.vocab_size, g.d_model);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "input_layernorm.weight", g.d_model);
    qwen_attention(t, g, p, /*gated=*/false);
    t.plain_norm(p + "post_attention_layernorm.weight", g.d_model);
    qwen_mlp(t, g, p);
  }
  t.plain_norm("model.norm.weight", g.d_model);
  // Qwen3-0.6B is tied yet its file holds lm_head.weight too, with the embedding's values.
  t.embedding("lm_head.weight", g.vocab_size, g.d_model);
  t.out.back().key = "model.embed_tokens.weight";
  return std::move(t.out);
}

std::vector<GenTensor> qwen3_5_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::string root = "model.language_model.";
  t.embedding(root + "embed_tokens.weight", g.vocab_size, g.d_model);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", root, i);
    t.zero_centred_norm(p + "input_layernorm.weight", g.d_model);
    if (g.is_full_attention(i)) {
      qwen_attention(t, g, p, /*gated=*/true);
    } else {
      gated_delta_net(t, g, p);
    }
    t.zero_centred_norm(p + "post_attention_layernorm.weight", g.d_model);
    qwen_mlp(t, g, p);
  }
  t.zero_centred_norm(root + "norm.weight", g.d_model);
  return std::move(t.out);
}

// Qwen3-MoE: Qwen3's layer with, on sparse layers, the router (mlp.gate) and the experts'
// SwiGLUs in place of the MLP; a separate head unless tied.
std::vector<GenTensor> qwen3_moe_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  t.embedding("model.embed_tokens.weight", g.vocab_size, g.d_model);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "input_layernorm.weight", g.d_model);
    qwen_attention(t, g, p, /*gated=*/false);
    t.plain_norm(p + "post_attention_layernorm.weight", g.d_model);
    if (!g.is_sparse(i)) {
      qwen_mlp(t, g, p);
      continue;
    }
    t.linear(p + "mlp.gate.weight", g.n_experts, g.d_model);
    for (int e = 0; e < g.n_experts; ++e) {
      const std::string x = fmt::format("{}mlp.experts.{}.", p, e);
      t.linear(x + "gate_proj.weight", g.moe_d_ff, g.d_model);
      t.linear(x + "up_proj.weight", g.moe_d_ff, g.d_model);
      t.out_linear(x + "down_proj.weight", g.d_model, g.moe_d_ff);
    }
  }
  t.plain_norm("model.norm.weight", g.d_model);
  if (!g.tied) t.linear("lm_head.weight", g.vocab_size, g.d_model);
  return std::move(t.out);
}

// Llama: Qwen3's layer without q/k norms, with optional biases (std 0.1: big enough that a
// bias applied twice or not at all moves the logits), and lm_head.weight only when untied.
std::vector<GenTensor> llama_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  const Init bias{.a = 0.0, .b = 0.1};
  t.embedding("model.embed_tokens.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "input_layernorm.weight", d);
    t.linear(p + "self_attn.q_proj.weight", q_rows, d);
    t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
    t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
    t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
    if (g.attention_bias) {
      t.add(p + "self_attn.q_proj.bias", {q_rows}, bias);
      t.add(p + "self_attn.k_proj.bias", {kv_rows}, bias);
      t.add(p + "self_attn.v_proj.bias", {kv_rows}, bias);
      t.add(p + "self_attn.o_proj.bias", {d}, bias);
    }
    t.plain_norm(p + "post_attention_layernorm.weight", d);
    qwen_mlp(t, g, p);
    if (g.mlp_bias) {
      t.add(p + "mlp.gate_proj.bias", {g.d_ff}, bias);
      t.add(p + "mlp.up_proj.bias", {g.d_ff}, bias);
      t.add(p + "mlp.down_proj.bias", {d}, bias);
    }
  }
  t.plain_norm("model.norm.weight", d);
  if (!g.tied) t.linear("lm_head.weight", g.vocab_size, d);
  return std::move(t.out);
}

// Gemma3ForCausalLM (tied, no lm_head.weight in the file). Every norm is used as (1 + w).
std::vector<GenTensor> gemma3_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.embedding("model.embed_tokens.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.zero_centred_norm(p + "input_layernorm.weight", d);
    t.linear(p + "self_attn.q_proj.weight", q_rows, d);
    t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
    t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
    t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
    t.zero_centred_norm(p + "self_attn.q_norm.weight", g.head_dim);
    t.zero_centred_norm(p + "self_attn.k_norm.weight", g.head_dim);
    t.zero_centred_norm(p + "post_attention_layernorm.weight", d);
    t.zero_centred_norm(p + "pre_feedforward_layernorm.weight", d);
    qwen_mlp(t, g, p);
    t.zero_centred_norm(p + "post_feedforward_layernorm.weight", d);
  }
  t.zero_centred_norm("model.norm.weight", d);
  return std::move(t.out);
}

// Mamba2 as initialised by mamba_ssm: A in [1, 16], dt in [0.001, 0.1] (decays exp(-dt A) of
// about 0.2..0.999 per token), D = 1.
std::vector<GenTensor> mamba2_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, h = g.ssm_heads, inner = g.ssm_d_inner();
  const std::int64_t conv = g.ssm_conv_dim();
  t.embedding("backbone.embeddings.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("backbone.layers.{}.", i);
    t.plain_norm(p + "norm.weight", d);
    t.add(p + "mixer.A_log", {h}, {.kind = InitKind::kLogUniform, .a = 1.0, .b = 16.0});
    t.add(p + "mixer.D", {h}, {.a = 1.0, .b = 0.0});
    t.add(p + "mixer.conv1d.weight", {conv, 1, g.conv_kernel},
          {.a = 0.0, .b = 1.0 / std::sqrt(double(g.conv_kernel))});
    t.add(p + "mixer.conv1d.bias", {conv}, {.a = 0.0, .b = 0.1});
    t.add(p + "mixer.dt_bias", {h}, {.kind = InitKind::kDtBias, .a = 0.001, .b = 0.1});
    t.linear(p + "mixer.in_proj.weight", inner + conv + h, d);
    t.plain_norm(p + "mixer.norm.weight", inner);
    t.out_linear(p + "mixer.out_proj.weight", d, inner);
  }
  t.plain_norm("backbone.norm_f.weight", d);
  return std::move(t.out);
}

// The Mamba2 mixer of a hybrid layer under `m` (mamba. or mixer.), initialised as mamba2_table's;
// without `norm` it has no gated norm (Falcon-H1's mamba_rms_norm false).
void mamba2_mixer(TableBuilder& t, const Geometry& g, const std::string& m, bool norm = true) {
  const std::int64_t d = g.d_model, h = g.ssm_heads, inner = g.ssm_d_inner();
  const std::int64_t conv = g.ssm_conv_dim();
  t.add(m + "A_log", {h}, {.kind = InitKind::kLogUniform, .a = 1.0, .b = 16.0});
  t.add(m + "D", {h}, {.a = 1.0, .b = 0.0});
  t.add(m + "conv1d.weight", {conv, 1, g.conv_kernel},
        {.a = 0.0, .b = 1.0 / std::sqrt(double(g.conv_kernel))});
  t.add(m + "conv1d.bias", {conv}, {.a = 0.0, .b = 0.1});
  t.add(m + "dt_bias", {h}, {.kind = InitKind::kDtBias, .a = 0.001, .b = 0.1});
  t.linear(m + "in_proj.weight", inner + conv + h, d);
  if (norm) t.plain_norm(m + "norm.weight", inner);
  t.out_linear(m + "out_proj.weight", d, inner);
}

// NemotronHForCausalLM: backbone.*, one norm and one mixer per block (Mamba2, attention without
// q/k norms, or up/down ReLU² MLP), backbone.norm_f, a separate lm_head.
std::vector<GenTensor> nemotron_h_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.embedding("backbone.embeddings.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("backbone.layers.{}.", i);
    t.plain_norm(p + "norm.weight", d);
    switch (g.block_pattern[static_cast<std::size_t>(i)]) {
      case 'M':
        mamba2_mixer(t, g, p + "mixer.");
        break;
      case '*':
        t.linear(p + "mixer.q_proj.weight", q_rows, d);
        t.linear(p + "mixer.k_proj.weight", kv_rows, d);
        t.linear(p + "mixer.v_proj.weight", kv_rows, d);
        t.out_linear(p + "mixer.o_proj.weight", d, q_rows);
        break;
      default:
        t.linear(p + "mixer.up_proj.weight", g.d_ff, d);
        t.out_linear(p + "mixer.down_proj.weight", d, g.d_ff);
        break;
    }
  }
  t.plain_norm("backbone.norm_f.weight", d);
  if (!g.tied) t.linear("lm_head.weight", g.vocab_size, d);
  return std::move(t.out);
}

// GraniteMoeHybridForCausalLM, dense: Mamba2 under mamba., attention without q/k norms, the
// shared_mlp's fused [gate | up] input_linear; tied, so no lm_head.weight in the file.
std::vector<GenTensor> granite_hybrid_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.embedding("model.embed_tokens.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "input_layernorm.weight", d);
    if (g.is_full_attention(i)) {
      t.linear(p + "self_attn.q_proj.weight", q_rows, d);
      t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
      t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
      t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
    } else {
      mamba2_mixer(t, g, p + "mamba.");
    }
    t.plain_norm(p + "post_attention_layernorm.weight", d);
    if (g.n_experts > 0) {  // block_sparse_moe: each expert's [gate | up] and down, stacked
      const std::int64_t e = g.n_experts, f = g.moe_d_ff;
      t.add(p + "block_sparse_moe.input_linear.weight", {e, 2 * f, d},
            {.a = 0.0, .b = 1.0 / std::sqrt(double(d))});
      t.add(p + "block_sparse_moe.output_linear.weight", {e, d, f},
            {.a = 0.0, .b = 1.0 / std::sqrt(double(f)) / std::sqrt(2.0 * g.n_layers)});
      t.linear(p + "block_sparse_moe.router.layer.weight", e, d);
    }
    t.linear(p + "shared_mlp.input_linear.weight", 2 * std::int64_t{g.d_ff}, d);
    t.out_linear(p + "shared_mlp.output_linear.weight", d, g.d_ff);
  }
  t.plain_norm("model.norm.weight", d);
  if (!g.tied) t.linear("lm_head.weight", g.vocab_size, d);
  return std::move(t.out);
}

// LFM2 (modeling_lfm2.py): operator_norm → self_attn (q/k layernorms, out_proj) or conv (gated
// short conv) → ffn_norm → feed_forward (w1 gate, w3 up, w2 down); the final norm is
// model.embedding_norm; tied unless the preset unties it.
std::vector<GenTensor> lfm2_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  const Init bias{.a = 0.0, .b = 0.1};
  t.embedding("model.embed_tokens.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "operator_norm.weight", d);
    if (g.is_full_attention(i)) {
      t.linear(p + "self_attn.q_proj.weight", q_rows, d);
      t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
      t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
      t.out_linear(p + "self_attn.out_proj.weight", d, q_rows);
      t.plain_norm(p + "self_attn.q_layernorm.weight", g.head_dim);
      t.plain_norm(p + "self_attn.k_layernorm.weight", g.head_dim);
    } else {
      t.linear(p + "conv.in_proj.weight", 3 * d, d);
      t.add(p + "conv.conv.weight", {d, 1, g.conv_kernel},
            {.a = 0.0, .b = 1.0 / std::sqrt(double(g.conv_kernel))});
      t.out_linear(p + "conv.out_proj.weight", d, d);
      if (g.conv_bias) {
        t.add(p + "conv.in_proj.bias", {3 * d}, bias);
        t.add(p + "conv.conv.bias", {d}, bias);
        t.add(p + "conv.out_proj.bias", {d}, bias);
      }
    }
    t.plain_norm(p + "ffn_norm.weight", d);
    if (g.family == Family::kLfm2Moe && i >= g.dense_layers) {
      // Lfm2MoeSparseMoeBlock: a tensor per expert as the released files, the router, and the
      // f32 expert_bias buffer (large enough to change some choices).
      for (int e = 0; e < g.n_experts; ++e) {
        const std::string x = fmt::format("{}feed_forward.experts.{}.", p, e);
        t.linear(x + "w1.weight", g.moe_d_ff, d);
        t.out_linear(x + "w2.weight", d, g.moe_d_ff);
        t.linear(x + "w3.weight", g.moe_d_ff, d);
      }
      t.add(p + "feed_forward.expert_bias", {g.n_experts}, {.a = 0.0, .b = 0.05}, DType::kF32);
      t.linear(p + "feed_forward.gate.weight", g.n_experts, d);
      continue;
    }
    t.linear(p + "feed_forward.w1.weight", g.d_ff, d);
    t.out_linear(p + "feed_forward.w2.weight", d, g.d_ff);
    t.linear(p + "feed_forward.w3.weight", g.d_ff, d);
  }
  t.plain_norm("model.embedding_norm.weight", d);
  if (!g.tied) t.linear("lm_head.weight", g.vocab_size, d);
  return std::move(t.out);
}

// FalconH1ForCausalLM: per layer the Mamba2 mixer (mamba.) and the attention (self_attn., no q/k
// norms) on input_layernorm's output, then pre_ff_layernorm and the SwiGLU feed_forward; the final
// norm is final_layernorm. The head is initialised 1 / lm_head_multiplier larger than a plain
// linear, so the generated logits are not flattened by the muP scaling.
std::vector<GenTensor> falcon_h1_table(const Geometry& g, DType dtype) {
  TableBuilder t{dtype, g.n_layers, {}};
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.embedding("model.embed_tokens.weight", g.vocab_size, d);
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.plain_norm(p + "input_layernorm.weight", d);
    mamba2_mixer(t, g, p + "mamba.", g.mamba_rms_norm);
    t.linear(p + "self_attn.q_proj.weight", q_rows, d);
    t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
    t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
    t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
    t.plain_norm(p + "pre_ff_layernorm.weight", d);
    t.linear(p + "feed_forward.gate_proj.weight", g.d_ff, d);
    t.linear(p + "feed_forward.up_proj.weight", g.d_ff, d);
    t.out_linear(p + "feed_forward.down_proj.weight", d, g.d_ff);
  }
  t.plain_norm("model.final_layernorm.weight", d);
  if (!g.tied) {
    t.add("lm_head.weight", {g.vocab_size, d},
          {.a = 0.0, .b = 2.0 / std::sqrt(double(d)) / g.lm_head_multiplier});
  }
  return std::move(t.out);
}

}  // namespace

std::vector<GenTensor> tensor_table(const Geometry& g, DType dtype) {
  switch (g.family) {
    case Family::kQwen3:
      return qwen3_table(g, dtype);
    case Family::kQwen3_5:
      return qwen3_5_table(g, dtype);
    case Family::kMamba2:
      return mamba2_table(g, dtype);
    case Family::kLlama:
      return llama_table(g, dtype);
    case Family::kGemma3:
      return gemma3_table(g, dtype);
    case Family::kQwen3Moe:
      return qwen3_moe_table(g, dtype);
    case Family::kGraniteHybrid:
    case Family::kGraniteMoe:
      return granite_hybrid_table(g, dtype);
    case Family::kLfm2:
    case Family::kLfm2Moe:
      return lfm2_table(g, dtype);
    case Family::kNemotronH:
      return nemotron_h_table(g, dtype);
    case Family::kFalconH1:
      return falcon_h1_table(g, dtype);
    case Family::kQwen3_5Moe:
    case Family::kQwen3Next:
      return qwen3_next_table(g, dtype);
  }
  return {};
}

}  // namespace recur::modelgen
