// Presets and overrides: the geometry of each family's released checkpoints (config.json field for
// field) and of the small test models, and the --layers / --hidden-size overrides on top of them
// (resolve_geometry). The model itself turns a geometry's config.json into tensor names and
// shapes (tensor_inits.cc).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "modelgen/families.h"
#include "modelgen/presets_moe.h"

namespace recur::modelgen {

bool Geometry::is_full_attention(int layer) const {
  if (family == Family::kGemma3) return (layer + 1) % sliding_pattern == 0;
  if (family == Family::kGraniteHybrid || family == Family::kGraniteMoe ||
      family == Family::kLfm2 || family == Family::kLfm2Moe) {
    return std::find(attention_layers.begin(), attention_layers.end(), layer) !=
           attention_layers.end();
  }
  if (family == Family::kNemotronH) return block_pattern[static_cast<std::size_t>(layer)] == '*';
  if (family != Family::kQwen3_5 && family != Family::kQwen3_5Moe && family != Family::kQwen3Next) {
    return family == Family::kQwen3 || family == Family::kLlama || family == Family::kQwen3Moe;
  }
  return (layer + 1) % full_attention_interval == 0;
}

bool Geometry::is_sparse(int layer) const {
  return n_experts > 0 && (layer + 1) % sparse_step == 0 &&
         std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) == mlp_only_layers.end();
}

namespace {

Geometry qwen3_preset(bool real) {
  Geometry g{.family = Family::kQwen3, .rope_theta = 1e6, .norm_eps = 1e-6};
  g.max_position = 40960;
  if (real) {  // Qwen/Qwen3-0.6B
    g.n_layers = 28, g.d_model = 1024, g.vocab_size = 151936, g.d_ff = 3072;
    g.n_heads = 16, g.n_kv_heads = 8, g.head_dim = 128;
  } else {  // like the real one, head_dim is not d_model / n_heads
    g.n_layers = 2, g.d_model = 64, g.d_ff = 192;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32;
  }
  return g;
}

Geometry qwen3_5_preset(bool real) {
  Geometry g{.family = Family::kQwen3_5, .rope_theta = 1e7, .norm_eps = 1e-6};
  g.max_position = 262144, g.partial_rotary_factor = 0.25, g.full_attention_interval = 4;
  g.conv_kernel = 4;
  if (real) {  // Qwen/Qwen3.5-0.8B
    g.n_layers = 24, g.d_model = 1024, g.vocab_size = 248320, g.d_ff = 3584;
    g.n_heads = 8, g.n_kv_heads = 2, g.head_dim = 256;
    g.lin_k_heads = 16, g.lin_v_heads = 16, g.lin_k_dim = 128, g.lin_v_dim = 128;
  } else {  // one linear,linear,linear,full block; more value than key heads, as in Qwen3.5-4B
    g.n_layers = 4, g.d_model = 64, g.d_ff = 192;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32;
    g.lin_k_heads = 2, g.lin_v_heads = 4, g.lin_k_dim = 16, g.lin_v_dim = 16;
  }
  return g;
}

Geometry mamba2_preset(bool real) {
  Geometry g{.family = Family::kMamba2, .norm_eps = 1e-5};
  g.expand = 2, g.ssm_groups = 1, g.conv_kernel = 4;
  if (real) {  // mamba2-130m in the Hugging Face layout
    g.n_layers = 24, g.d_model = 768, g.vocab_size = 50288;
    g.ssm_heads = 24, g.ssm_head_dim = 64, g.ssm_state = 128;
  } else {
    g.n_layers = 2, g.d_model = 64;
    g.ssm_heads = 8, g.ssm_head_dim = 16, g.ssm_state = 16;
  }
  return g;
}

// Llama 3.2 1B; the tiny one keeps its rope_scaling (head_dim 16 has high, blended and divided
// frequencies) but unties the head, as Llama 3.1 8B; tiny-bias is the other side of every flag.
Geometry llama_preset(const std::string& preset) {
  Geometry g{.family = Family::kLlama, .rope_theta = 500000.0, .norm_eps = 1e-5};
  g.max_position = 131072, g.rope_factor = 32.0, g.rope_low_freq_factor = 1.0;
  g.rope_high_freq_factor = 4.0, g.rope_original_max_position = 8192;
  if (preset == "llama-3.2-1b") {  // meta-llama/Llama-3.2-1B-Instruct
    g.n_layers = 16, g.d_model = 2048, g.vocab_size = 128256, g.d_ff = 8192;
    g.n_heads = 32, g.n_kv_heads = 8, g.head_dim = 64;
    return g;
  }
  g.n_layers = 2, g.d_model = 64, g.d_ff = 192;
  g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
  g.tied = false;
  if (preset == "tiny-bias") {
    g.tied = true, g.attention_bias = true, g.mlp_bias = true, g.head_dim_key = false;
    g.rope_theta = 10000.0, g.rope_factor = 0.0, g.max_position = 4096;
  }
  return g;
}

// google/gemma-3-1b-it, google/gemma-3-270m; tiny: two sliding layers and a global one, a
// 16-token window (tests cross it cheaply), query_pre_attn_scalar unlike head_dim, linear RoPE
// scaling on the global layer (as gemma-3-4b and larger) and final logit softcapping, so every
// path of the family runs.
Geometry gemma3_preset(const std::string& preset) {
  Geometry g{.family = Family::kGemma3, .rope_theta = 1e6, .norm_eps = 1e-6};
  g.max_position = 32768, g.sliding_window = 512, g.sliding_pattern = 6;
  g.rope_local_theta = 1e4, g.query_pre_attn_scalar = 256, g.head_dim = 256;
  g.n_heads = 4, g.n_kv_heads = 1, g.vocab_size = 262144;
  if (preset == "gemma-3-1b") {
    g.n_layers = 26, g.d_model = 1152, g.d_ff = 6912;
  } else if (preset == "gemma-3-270m") {
    g.n_layers = 18, g.d_model = 640, g.d_ff = 2048, g.layer_types = true;
  } else {
    g.n_layers = 3, g.d_model = 64, g.d_ff = 192, g.vocab_size = 0;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32, g.query_pre_attn_scalar = 24;
    g.sliding_window = 16, g.sliding_pattern = 3, g.layer_types = true;
    g.rope_linear_factor = 8.0, g.final_softcap = 30.0;
  }
  return g;
}

// Qwen/Qwen3-30B-A3B; tiny: a dense layer between two sparse ones (mlp_only_layers), 3 of 8
// experts per token, an untied head as the real one.
Geometry qwen3_moe_preset(bool real) {
  Geometry g{.family = Family::kQwen3Moe, .rope_theta = 1e6, .norm_eps = 1e-6};
  g.max_position = 40960, g.tied = false, g.norm_topk_prob = true, g.sparse_step = 1;
  if (real) {
    g.n_layers = 48, g.d_model = 2048, g.vocab_size = 151936, g.d_ff = 6144;
    g.n_heads = 32, g.n_kv_heads = 4, g.head_dim = 128;
    g.n_experts = 128, g.experts_per_tok = 8, g.moe_d_ff = 768;
  } else {
    g.n_layers = 3, g.d_model = 64, g.d_ff = 192;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 32;
    g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32, g.mlp_only_layers = {1};
  }
  return g;
}

// ibm-granite/granite-4.0-h-350m; tiny: Mamba2, attention, Mamba2 (the state of both kinds, and
// a recurrent layer after the attention one), the real model's multipliers with the attention
// scale 1 / head_dim as muP sets it, and a conv-free-of-bias check left to the real preset.
Geometry granite_hybrid_preset(bool real) {
  Geometry g{.family = Family::kGraniteHybrid, .rope_theta = 10000.0, .norm_eps = 1e-5};
  g.expand = 2, g.ssm_groups = 1, g.conv_kernel = 4, g.max_position = 32768;
  g.embedding_multiplier = 12.0, g.residual_multiplier = 0.246, g.logits_scaling = 3.0;
  if (real) {
    g.n_layers = 32, g.d_model = 768, g.vocab_size = 100352, g.d_ff = 2048;
    g.n_heads = 12, g.n_kv_heads = 4, g.head_dim = 64;
    g.ssm_heads = 48, g.ssm_head_dim = 32, g.ssm_state = 128;
    g.attention_layers = {10, 13, 17, 27};
  } else {
    g.n_layers = 3, g.d_model = 64, g.d_ff = 128;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
    g.ssm_heads = 8, g.ssm_head_dim = 16, g.ssm_state = 16;
    g.attention_layers = {1};
  }
  g.attention_multiplier = 1.0 / g.head_dim;
  return g;
}

// ibm-granite/granite-4.0-h-tiny (docs/model-granite.md: which fields are verified where): 40
// layers, attention at 5, 15, 25 and 35, 64 experts of 512 with 6 per token beside a 1024-wide
// shared MLP; tiny: Mamba2, attention, Mamba2, Mamba2, 8 experts of 32, 3 per token, a shared MLP
// wider than the experts (a mixed-up width fails to load).
Geometry granite_moe_preset(bool real) {
  Geometry g{.family = Family::kGraniteMoe, .rope_theta = 10000.0, .norm_eps = 1e-5};
  g.expand = 2, g.ssm_groups = 1, g.conv_kernel = 4, g.max_position = 131072;
  g.embedding_multiplier = 12.0, g.residual_multiplier = 0.22, g.logits_scaling = 6.0;
  if (real) {
    g.n_layers = 40, g.d_model = 1536, g.vocab_size = 100352, g.d_ff = 1024;
    g.n_heads = 12, g.n_kv_heads = 4, g.head_dim = 128;
    g.ssm_heads = 48, g.ssm_head_dim = 64, g.ssm_state = 128;
    g.attention_layers = {5, 15, 25, 35};
    g.n_experts = 64, g.experts_per_tok = 6, g.moe_d_ff = 512;
  } else {
    g.n_layers = 4, g.d_model = 64, g.d_ff = 96;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
    g.ssm_heads = 8, g.ssm_head_dim = 16, g.ssm_state = 16;
    g.attention_layers = {1};
    g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32;
  }
  g.attention_multiplier = 1.0 / g.head_dim;
  return g;
}

// LiquidAI/LFM2-350M (its config.json's spelling: block_ff_dim 6656 adjusted to 4608,
// full_attn_idxs, rope_theta); tiny: conv, conv, attention, conv as the real schedule starts,
// written in LFM2.5's spelling (layer_types, rope_parameters, tie_embedding), its block_ff_dim
// 280 adjusted to 192 by the rounding to 64; tiny-bias: conv biases and an untied head.
Geometry lfm2_preset(const std::string& preset) {
  Geometry g{.family = Family::kLfm2, .rope_theta = 1e6, .norm_eps = 1e-5};
  g.max_position = 128000, g.conv_kernel = 3, g.block_multiple_of = 256;
  if (preset == "lfm2-350m") {
    g.n_layers = 16, g.d_model = 1024, g.vocab_size = 65536;
    g.n_heads = 16, g.n_kv_heads = 8, g.head_dim = 64;
    g.block_ff_dim = 6656, g.d_ff = 4608;
    g.attention_layers = {2, 5, 8, 10, 12, 14};
    return g;
  }
  g.n_layers = 4, g.d_model = 64, g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
  g.block_ff_dim = 280, g.block_multiple_of = 64, g.d_ff = 192;
  g.attention_layers = {2};
  g.lfm2_5_keys = true;
  if (preset == "tiny-bias") g.conv_bias = true, g.tied = false, g.lfm2_5_keys = false;
  return g;
}

// LiquidAI/LFM2-8B-A1B (docs/model-lfm2.md): 24 layers, attention at 2, 6, 10, 14, 18, 21, the
// first two with a 7168-wide SwiGLU, the others 32 experts of 1792 with 4 per token; tiny: conv,
// conv, attention, conv with the first layer dense, 8 experts of 32 with 3 per token, a dense layer
// wider than the experts (a mixed-up width fails to load).
Geometry lfm2_moe_preset(bool real) {
  Geometry g{.family = Family::kLfm2Moe, .rope_theta = 1e6, .norm_eps = 1e-5};
  g.max_position = 128000, g.conv_kernel = 3, g.norm_topk_prob = true;
  if (real) {
    g.n_layers = 24, g.d_model = 2048, g.vocab_size = 65536, g.d_ff = 7168;
    g.n_heads = 32, g.n_kv_heads = 8, g.head_dim = 64;
    g.attention_layers = {2, 6, 10, 14, 18, 21};
    g.dense_layers = 2, g.n_experts = 32, g.experts_per_tok = 4, g.moe_d_ff = 1792;
    return g;
  }
  g.n_layers = 4, g.d_model = 64, g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
  g.d_ff = 96, g.attention_layers = {2};
  g.dense_layers = 1, g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32;
  return g;
}

// nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (docs/model-nemotron-h.md): 23 Mamba2, 23 MoE and 6
// attention blocks, 128 ReLU² experts of 1856 with 6 per token beside a 3712-wide shared one, one
// router group; tiny-moe: M E M * E - (every block kind, an MoE block after each state kind), 8
// experts of 32 with 3 per token in 2 groups of which 1 is kept (so the grouping decides), a
// shared expert and an MLP block of other widths (a mixed-up width fails to load).
Geometry nemotron_h_moe_preset(bool real) {
  Geometry g{.family = Family::kNemotronH, .norm_eps = 1e-5};
  g.expand = 2, g.conv_kernel = 4, g.tied = false, g.norm_topk_prob = true;
  g.routed_scaling = 2.5;
  if (real) {
    g.block_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
    g.d_model = 2688, g.vocab_size = 131072, g.d_ff = 1856, g.max_position = 262144;
    g.n_heads = 32, g.n_kv_heads = 2, g.head_dim = 128;
    g.ssm_heads = 64, g.ssm_head_dim = 64, g.ssm_state = 128, g.ssm_groups = 8;
    g.n_experts = 128, g.experts_per_tok = 6, g.moe_d_ff = 1856, g.shared_d_ff = 3712;
  } else {
    g.block_pattern = "MEM*E-";
    g.d_model = 64, g.d_ff = 96, g.max_position = 8192;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
    g.ssm_heads = 8, g.ssm_head_dim = 16, g.ssm_state = 16, g.ssm_groups = 2;
    g.n_experts = 8, g.experts_per_tok = 3, g.moe_d_ff = 32, g.shared_d_ff = 48;
    g.expert_groups = 2, g.topk_groups = 1;
  }
  g.n_layers = static_cast<int>(g.block_pattern.size());
  return g;
}

// nvidia/Nemotron-H-4B-Instruct-128K; tiny: M * - M - (both states, a Mamba2 block after the
// attention one, MLP blocks between), two SSM groups so the per-group gated norm differs from the
// whole-row one, an untied head as the real one.
Geometry nemotron_h_preset(bool real) {
  Geometry g{.family = Family::kNemotronH, .norm_eps = 1e-5};
  g.expand = 2, g.conv_kernel = 4, g.tied = false;
  if (real) {
    g.block_pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
    g.d_model = 3072, g.vocab_size = 131072, g.d_ff = 12288, g.max_position = 131072;
    g.n_heads = 32, g.n_kv_heads = 8, g.head_dim = 128;
    g.ssm_heads = 112, g.ssm_head_dim = 64, g.ssm_state = 128, g.ssm_groups = 8;
  } else {
    g.block_pattern = "M*-M-";
    g.d_model = 64, g.d_ff = 128, g.max_position = 8192;
    g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 16;
    g.ssm_heads = 8, g.ssm_head_dim = 16, g.ssm_state = 16, g.ssm_groups = 2;
  }
  g.n_layers = static_cast<int>(g.block_pattern.size());
  return g;
}

// tiiuae/Falcon-H1-0.5B-Instruct (docs/model-falcon-h1.md: which fields are verified where);
// tiny: its multipliers and flags with a head_dim unlike d_model / heads and a mamba_d_ssm unlike
// mamba_expand · d_model, as the real one; tiny-norm: the mixer's gated norm (norm before gate)
// over two SSM groups, and a tied head.
Geometry falcon_h1_preset(const std::string& preset) {
  Geometry g{.family = Family::kFalconH1, .rope_theta = 1e11, .norm_eps = 1e-5};
  g.expand = 2, g.ssm_groups = 1, g.conv_kernel = 4, g.max_position = 16384, g.tied = false;
  g.embedding_multiplier = 5.656854249492381, g.lm_head_multiplier = 0.0390625;
  g.key_multiplier = 0.39062499999999994, g.attention_in_multiplier = 1.0;
  g.attention_out_multiplier = 0.9375, g.ssm_in_multiplier = 1.25;
  g.ssm_out_multiplier = 0.23570226039551587;
  g.mlp_multipliers = {0.8838834764831844, 0.5859375};
  g.ssm_multipliers = {0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738};
  if (preset == "falcon-h1-0.5b") {
    g.n_layers = 36, g.d_model = 1024, g.vocab_size = 32784, g.d_ff = 2048;
    g.n_heads = 8, g.n_kv_heads = 2, g.head_dim = 64;
    g.ssm_heads = 24, g.ssm_head_dim = 64, g.ssm_state = 128;
    return g;
  }
  g.n_layers = 2, g.d_model = 64, g.d_ff = 128;
  g.n_heads = 4, g.n_kv_heads = 2, g.head_dim = 8;
  g.ssm_heads = 6, g.ssm_head_dim = 16, g.ssm_state = 16;
  if (preset == "tiny-norm") {
    g.mamba_rms_norm = true, g.mamba_norm_before_gate = true, g.ssm_groups = 2, g.tied = true;
  }
  return g;
}

Result<Geometry> preset_geometry(Family family, const std::string& preset) {
  const FamilyRecord& record = family_record(family);
  if (record.files != nullptr) {
    if (preset != "tiny" &&
        std::find(record.presets.begin(), record.presets.end(), preset) == record.presets.end()) {
      return Error(StatusCode::kInvalidArgument, "preset '{}' does not fit family {} (presets: {})",
                   preset, record.word, fmt::join(record.presets, ", "));
    }
    return record.files->geometry(preset);
  }
  if ((family == Family::kQwen3_5Moe && (preset == "tiny" || preset == "qwen3.5-35b-a3b")) ||
      (family == Family::kQwen3Next && (preset == "tiny" || preset == "qwen3-next-80b-a3b"))) {
    Geometry g = family == Family::kQwen3Next ? qwen3_next_preset(preset != "tiny")
                                              : qwen3_5_moe_preset(preset != "tiny");
    g.preset = preset;
    return g;
  }
  if (family == Family::kFalconH1 &&
      (preset == "tiny" || preset == "tiny-norm" || preset == "falcon-h1-0.5b")) {
    Geometry g = falcon_h1_preset(preset);
    g.preset = preset;
    return g;
  }
  if (family == Family::kLfm2 &&
      (preset == "tiny" || preset == "tiny-bias" || preset == "lfm2-350m")) {
    Geometry g = lfm2_preset(preset);
    g.preset = preset;
    return g;
  }
  if (family == Family::kNemotronH && (preset == "tiny" || preset == "nemotron-h-4b")) {
    Geometry g = nemotron_h_preset(preset != "tiny");
    g.preset = preset;
    return g;
  }
  if (family == Family::kNemotronH &&
      (preset == "tiny-moe" || preset == "nemotron-3-nano-30b-a3b")) {
    Geometry g = nemotron_h_moe_preset(preset != "tiny-moe");
    g.preset = preset;
    return g;
  }
  if (family == Family::kLfm2Moe && (preset == "tiny" || preset == "lfm2-8b-a1b")) {
    Geometry g = lfm2_moe_preset(preset != "tiny");
    g.preset = preset;
    return g;
  }
  if (family == Family::kGraniteMoe && (preset == "tiny" || preset == "granite-4.0-h-tiny")) {
    Geometry g = granite_moe_preset(preset != "tiny");
    g.preset = preset;
    return g;
  }
  if (family == Family::kGraniteHybrid &&
      (preset == "tiny" || preset == "tiny-groups" || preset == "tiny-bias" ||
       preset == "granite-4.0-h-350m")) {
    Geometry g = granite_hybrid_preset(preset == "granite-4.0-h-350m");
    // tiny-groups: two SSM groups, whose gated norm still takes the whole row; tiny-bias: the
    // Mamba2 projections' biases (mamba_proj_bias).
    if (preset == "tiny-groups") g.ssm_groups = 2;
    if (preset == "tiny-bias") g.mamba_proj_bias = true;
    g.preset = preset;
    return g;
  }
  if (family == Family::kQwen3Moe && (preset == "tiny" || preset == "qwen3-30b-a3b")) {
    Geometry g = qwen3_moe_preset(preset != "tiny");
    g.preset = preset;
    return g;
  }
  if (family == Family::kGemma3 &&
      (preset == "tiny" || preset == "gemma-3-1b" || preset == "gemma-3-270m")) {
    Geometry g = gemma3_preset(preset);
    g.preset = preset;
    return g;
  }
  if (family == Family::kLlama &&
      (preset == "tiny" || preset == "tiny-bias" || preset == "llama-3.2-1b")) {
    Geometry g = llama_preset(preset);
    g.preset = preset;
    return g;
  }
  const bool tiny = preset == "tiny";
  if (tiny || (family == Family::kQwen3 && preset == "qwen3-0.6b") ||
      (family == Family::kQwen3_5 && preset == "qwen3.5-0.8b") ||
      (family == Family::kMamba2 && preset == "mamba2-130m")) {
    Geometry g = family == Family::kQwen3     ? qwen3_preset(!tiny)
                 : family == Family::kQwen3_5 ? qwen3_5_preset(!tiny)
                                              : mamba2_preset(!tiny);
    g.preset = preset;
    return g;
  }
  return Error(StatusCode::kInvalidArgument,
               "preset '{}' does not fit family {} (presets: tiny, qwen3-0.6b for qwen3, "
               "qwen3.5-0.8b for qwen3_5, mamba2-130m for mamba2, tiny-bias and llama-3.2-1b "
               "for llama, gemma-3-1b and gemma-3-270m for gemma3, qwen3-30b-a3b for qwen3_moe, "
               "granite-4.0-h-350m for granitemoehybrid, granite-4.0-h-tiny for "
               "granitemoehybrid_moe, lfm2-8b-a1b for lfm2_moe, lfm2-350m and tiny-bias for lfm2, "
               "nemotron-h-4b, nemotron-3-nano-30b-a3b and tiny-moe for nemotron_h, "
               "falcon-h1-0.5b and tiny-norm for falcon_h1, "
               "qwen3.5-35b-a3b for qwen3_5_moe, qwen3-next-80b-a3b for qwen3_next)",
               preset, family_name(family));
}

int scaled(int value, int new_d, int old_d) {
  return std::max(1, static_cast<int>(std::lround(static_cast<double>(value) * new_d / old_d)));
}

// A new d_model keeps head sizes and scales head counts and the MLP width with it.
Status apply_hidden_size(Geometry& g, int d) {
  const int old_d = g.d_model;
  g.d_model = d;
  if (g.family == Family::kMamba2 || g.family == Family::kGraniteHybrid ||
      g.family == Family::kGraniteMoe) {
    if (g.expand * d % g.ssm_head_dim != 0) {
      return Error(StatusCode::kInvalidArgument,
                   "--hidden-size {}: expand ({}) x hidden size must be a multiple of the SSM "
                   "head size {}",
                   d, g.expand, g.ssm_head_dim);
    }
    g.ssm_heads = g.expand * d / g.ssm_head_dim;
    if (g.family == Family::kMamba2) return Status::ok();
  }
  if (g.family == Family::kFalconH1) g.ssm_heads = scaled(g.ssm_heads, d, old_d);
  g.n_heads = scaled(g.n_heads, d, old_d);
  g.n_kv_heads = std::min(scaled(g.n_kv_heads, d, old_d), g.n_heads);
  while (g.n_heads % g.n_kv_heads != 0) --g.n_kv_heads;
  g.d_ff = (scaled(g.d_ff, d, old_d) + 7) / 8 * 8;
  if (g.moe_d_ff > 0) g.moe_d_ff = (scaled(g.moe_d_ff, d, old_d) + 7) / 8 * 8;
  if (g.shared_d_ff > 0) g.shared_d_ff = (scaled(g.shared_d_ff, d, old_d) + 7) / 8 * 8;
  if (g.family == Family::kQwen3_5 || g.family == Family::kQwen3_5Moe ||
      g.family == Family::kQwen3Next) {
    g.lin_v_heads = scaled(g.lin_v_heads, d, old_d);
    g.lin_k_heads = std::min(scaled(g.lin_k_heads, d, old_d), g.lin_v_heads);
    while (g.lin_v_heads % g.lin_k_heads != 0) --g.lin_k_heads;
  }
  return Status::ok();
}

}  // namespace

Result<Geometry> resolve_geometry(const GenSpec& spec, int n_tokens) {
  RECUR_ASSIGN_OR_RETURN(Geometry g, preset_geometry(spec.family, spec.preset));
  if (spec.layers < 0 || spec.hidden_size < 0 || spec.vocab_size < 0) {
    return Error(StatusCode::kInvalidArgument, "layers, hidden size and vocab size must be >= 0");
  }
  if (spec.layers > 0) {
    if (g.family == Family::kNemotronH) {
      if (spec.layers > g.n_layers) {
        return Error(StatusCode::kInvalidArgument,
                     "--layers {}: the {} pattern has {} blocks; fewer layers keep a prefix of it",
                     spec.layers, g.preset, g.n_layers);
      }
      g.block_pattern.resize(static_cast<std::size_t>(spec.layers));
    }
    g.n_layers = spec.layers;
  }
  if (spec.hidden_size > 0) RECUR_RETURN_IF_ERROR(apply_hidden_size(g, spec.hidden_size));
  if (spec.vocab_size > 0) {
    g.vocab_size = spec.vocab_size;
  } else if (g.vocab_size == 0) {  // tiny: the tokenizer rounded up to 64 rows, with padding rows
    g.vocab_size = (n_tokens / 64 + 1) * 64;
  }
  if (g.vocab_size < n_tokens) {
    return Error(StatusCode::kInvalidArgument,
                 "vocab size {} is smaller than the generated tokenizer ({} tokens)", g.vocab_size,
                 n_tokens);
  }
  return g;
}

}  // namespace recur::modelgen
