// Presets of qwen3_5_moe (Qwen3.5-35B-A3B) and qwen3_next
// (Qwen3-Next-80B-A3B-Instruct, model-families.md section 3): Qwen3.5's hybrid layer with a routed
// mixture of experts and a sigmoid-gated shared expert as its MLP.
#include "modelgen/presets_moe.h"

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

}  // namespace recur::modelgen
