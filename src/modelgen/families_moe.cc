// Presets and tensor tables of qwen3_5_moe (Qwen3.5-35B-A3B) and qwen3_next
// (Qwen3-Next-80B-A3B-Instruct, model-families.md section 3): Qwen3.5's hybrid layer with a routed
// mixture of experts and a sigmoid-gated shared expert as its MLP.
#include "modelgen/families_moe.h"

#include <cmath>

namespace recur::modelgen {

// Qwen/Qwen3.5-35B-A3B's text_config; tiny: one linear,linear,linear,full block, 3 of 8 experts,
// a shared expert wider than the routed ones (a mixed-up width fails to load), untied head.
Geometry qwen3_5_moe_preset(bool real) {
  Geometry g{.family = Family::kQwen3_5Moe, .rope_theta = 1e7, .norm_eps = 1e-6};
  g.max_position = 262144, g.partial_rotary_factor = 0.25, g.full_attention_interval = 4;
  g.conv_kernel = 4, g.tied = false, g.norm_topk_prob = true, g.sparse_step = 1;
  if (real) {
    g.n_layers = 40, g.d_model = 2048, g.vocab_size = 248320;
    g.n_heads = 16, g.n_kv_heads = 2, g.head_dim = 256;
    g.lin_k_heads = 16, g.lin_v_heads = 32, g.lin_k_dim = 128, g.lin_v_dim = 128;
    g.n_experts = 256, g.experts_per_tok = 8, g.moe_d_ff = 512, g.shared_d_ff = 512;
  } else {
    g.n_layers = 4, g.d_model = 64;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32;
    g.lin_k_heads = 2, g.lin_v_heads = 4, g.lin_k_dim = 16, g.lin_v_dim = 16;
    g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32, g.shared_d_ff = 48;
  }
  return g;
}

// Qwen/Qwen3-Next-80B-A3B-Instruct (spec 3.1); tiny: as qwen3_5_moe's, plus a dense layer
// (mlp_only_layers, intermediate_size) as Qwen3NextDecoderLayer allows, 2 value heads per key
// head so the interleaved in_proj_qkvz / in_proj_ba groups hold more than one.
Geometry qwen3_next_preset(bool real) {
  Geometry g{.family = Family::kQwen3Next, .rope_theta = 1e7, .norm_eps = 1e-6};
  g.max_position = 262144, g.partial_rotary_factor = 0.25, g.full_attention_interval = 4;
  g.conv_kernel = 4, g.tied = false, g.norm_topk_prob = true, g.sparse_step = 1;
  if (real) {
    g.n_layers = 48, g.d_model = 2048, g.vocab_size = 151936, g.d_ff = 5120;
    g.n_heads = 16, g.n_kv_heads = 2, g.head_dim = 256;
    g.lin_k_heads = 16, g.lin_v_heads = 32, g.lin_k_dim = 128, g.lin_v_dim = 128;
    g.n_experts = 512, g.experts_per_tok = 10, g.moe_d_ff = 512, g.shared_d_ff = 512;
  } else {
    g.n_layers = 4, g.d_model = 64, g.d_ff = 96;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32;
    g.lin_k_heads = 2, g.lin_v_heads = 4, g.lin_k_dim = 16, g.lin_v_dim = 16;
    g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32, g.shared_d_ff = 48;
    g.mlp_only_layers = {1};
  }
  return g;
}

namespace {

struct Builder {
  DType dtype;
  int n_layers;
  std::vector<GenTensor> out;

  void add(std::string name, std::vector<std::int64_t> shape, Init init,
           std::optional<DType> fixed = std::nullopt) {
    out.push_back(
        {.entry = {.name = name, .shape = std::move(shape), .dtype = fixed.value_or(dtype)},
         .init = init,
         .key = name});
  }
  // As families.cc's TableBuilder: unit-variance inputs stay so, residual writes are scaled down
  // by sqrt(2 * layers).
  void linear(const std::string& name, std::int64_t rows, std::int64_t cols) {
    add(name, {rows, cols}, {.a = 0.0, .b = 1.0 / std::sqrt(double(cols))});
  }
  void out_linear(const std::string& name, std::int64_t rows, std::int64_t cols) {
    add(name, {rows, cols},
        {.a = 0.0, .b = 1.0 / std::sqrt(double(cols)) / std::sqrt(2.0 * n_layers)});
  }
  void zero_centred_norm(const std::string& name, std::int64_t n) {
    add(name, {n}, {.a = 0.0, .b = 0.02});
  }
  void plain_norm(const std::string& name, std::int64_t n, std::optional<DType> fixed) {
    add(name, {n}, {.a = 1.0, .b = 0.02}, fixed);
  }
  void swiglu(const std::string& m, std::int64_t d, std::int64_t ff) {
    linear(m + "down_proj.weight", d, ff);
    out.back().init.b /= std::sqrt(2.0 * n_layers);
    linear(m + "gate_proj.weight", ff, d);
    linear(m + "up_proj.weight", ff, d);
  }
};

void gated_attention(Builder& t, const Geometry& g, const std::string& p) {
  const std::int64_t d = g.d_model, q_rows = std::int64_t{g.n_heads} * g.head_dim;
  const std::int64_t kv_rows = std::int64_t{g.n_kv_heads} * g.head_dim;
  t.zero_centred_norm(p + "self_attn.k_norm.weight", g.head_dim);
  t.linear(p + "self_attn.k_proj.weight", kv_rows, d);
  t.out_linear(p + "self_attn.o_proj.weight", d, q_rows);
  t.zero_centred_norm(p + "self_attn.q_norm.weight", g.head_dim);
  t.linear(p + "self_attn.q_proj.weight", 2 * q_rows, d);  // per head [q | gate]
  t.linear(p + "self_attn.v_proj.weight", kv_rows, d);
}

// Gated DeltaNet as families.cc's (decays of about 0.75..0.997 per token); Qwen3-Next's
// projections are interleaved per key head and its A_log and norm are in the weights' dtype,
// Qwen3.5's are f32 (spec 2.3, 3.3).
void gated_delta(Builder& t, const Geometry& g, const std::string& p) {
  const bool next = g.family == Family::kQwen3Next;
  const std::int64_t d = g.d_model, hv = g.lin_v_heads;
  const std::int64_t conv = g.lin_conv_dim(), v_rows = hv * g.lin_v_dim;
  const std::optional<DType> f32 = next ? std::nullopt : std::optional<DType>(DType::kF32);
  const std::string a = p + "linear_attn.";
  t.add(a + "A_log", {hv}, {.kind = InitKind::kLogUniform, .a = 0.02, .b = 1.0}, f32);
  t.add(a + "conv1d.weight", {conv, 1, g.conv_kernel},
        {.a = 0.0, .b = 1.0 / std::sqrt(double(g.conv_kernel))});
  t.add(a + "dt_bias", {hv}, {.a = -2.0, .b = 0.5});
  if (next) {
    t.linear(a + "in_proj_ba.weight", 2 * hv, d);
    t.linear(a + "in_proj_qkvz.weight", conv + v_rows, d);
  } else {
    t.linear(a + "in_proj_a.weight", hv, d);
    t.linear(a + "in_proj_b.weight", hv, d);
    t.linear(a + "in_proj_qkv.weight", conv, d);
    t.linear(a + "in_proj_z.weight", v_rows, d);
  }
  t.plain_norm(a + "norm.weight", g.lin_v_dim, f32);
  t.out_linear(a + "out_proj.weight", d, v_rows);
}

// The router, each expert's SwiGLU (a tensor per expert, as Qwen3-Next's files and the
// per-expert layout mlx-lm's sanitize accepts), the shared expert and its gate.
void sparse_mlp(Builder& t, const Geometry& g, const std::string& p) {
  for (int e = 0; e < g.n_experts; ++e) {
    t.swiglu(fmt::format("{}mlp.experts.{}.", p, e), g.d_model, g.moe_d_ff);
  }
  t.linear(p + "mlp.gate.weight", g.n_experts, g.d_model);
  t.swiglu(p + "mlp.shared_expert.", g.d_model, g.shared_d_ff);
  t.linear(p + "mlp.shared_expert_gate.weight", 1, g.d_model);
}

}  // namespace

std::vector<GenTensor> qwen3_next_table(const Geometry& g, DType dtype) {
  Builder t{dtype, g.n_layers, {}};
  const std::string root = g.family == Family::kQwen3_5Moe ? "model.language_model." : "model.";
  t.add(root + "embed_tokens.weight", {g.vocab_size, g.d_model},
        {.a = 0.0, .b = 2.0 / std::sqrt(double(g.d_model))});
  for (int i = 0; i < g.n_layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", root, i);
    t.zero_centred_norm(p + "input_layernorm.weight", g.d_model);
    if (g.is_full_attention(i)) {
      gated_attention(t, g, p);
    } else {
      gated_delta(t, g, p);
    }
    if (g.is_sparse(i)) {
      sparse_mlp(t, g, p);
    } else {
      t.swiglu(p + "mlp.", g.d_model, g.d_ff);
    }
    t.zero_centred_norm(p + "post_attention_layernorm.weight", g.d_model);
  }
  t.zero_centred_norm(root + "norm.weight", g.d_model);
  if (!g.tied) {
    t.add("lm_head.weight", {g.vocab_size, g.d_model},
          {.a = 0.0, .b = 2.0 / std::sqrt(double(g.d_model))});
  }
  return std::move(t.out);
}

}  // namespace recur::modelgen
