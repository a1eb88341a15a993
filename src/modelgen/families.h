// Geometry, tensor tables and config files of the generated families (presets.cc, tensor_inits.cc,
// config_files*.cc). Internal to modelgen; tests use it to check the tensor table of the real
// presets without writing them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "convert/safetensors_writer.h"
#include "modelgen/generator.h"
#include "util/status.h"

namespace recur::modelgen {

using convert::TensorEntry;

// Dimension names as in docs/glossary.md; fields a family does not use stay 0.
struct Geometry {
  Family family = Family::kQwen3_5;
  std::string preset;
  int n_layers = 0;
  int d_model = 0;
  int vocab_size = 0;  // embedding rows
  int d_ff = 0;
  // attention (qwen3, qwen3_5 full-attention layers)
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  double partial_rotary_factor = 1.0;
  // gated delta net (qwen3_5 linear-attention layers)
  int lin_k_heads = 0;
  int lin_v_heads = 0;
  int lin_k_dim = 0;
  int lin_v_dim = 0;
  int conv_kernel = 0;  // also mamba2
  int full_attention_interval = 0;
  // mamba2
  int ssm_heads = 0;
  int ssm_head_dim = 0;
  int ssm_state = 0;
  int ssm_groups = 0;
  int expand = 0;
  // gemma3: sliding-window layers, global every sliding_pattern-th layer
  int sliding_window = 0;
  int sliding_pattern = 0;
  bool layer_types = false;  // write layer_types (gemma-3-270m) instead of sliding_window_pattern
  double query_pre_attn_scalar = 0.0;
  double rope_local_theta = 0.0;
  double rope_linear_factor = 0.0;  // 0: rope_scaling null
  double final_softcap = 0.0;       // 0: final_logit_softcapping null
  // shared
  int max_position = 0;
  double rope_theta = 0.0;
  double norm_eps = 0.0;
  bool tied = true;  // tie_word_embeddings
  // llama
  bool attention_bias = false, mlp_bias = false;
  bool head_dim_key = true;  // config.json names head_dim (older Llama configs leave it out)
  double rope_factor = 0.0;  // rope_scaling llama3 when > 0, with the three below
  double rope_low_freq_factor = 0.0, rope_high_freq_factor = 0.0;
  int rope_original_max_position = 0;
  // qwen3_moe: experts on the layers (i + 1) % sparse_step == 0 not in mlp_only_layers
  int n_experts = 0, experts_per_tok = 0, moe_d_ff = 0, sparse_step = 1;
  int shared_d_ff = 0;  // qwen3_5_moe, qwen3_next: shared_expert_intermediate_size
  std::vector<int> mlp_only_layers;
  bool norm_topk_prob = false;
  // granitemoehybrid: attention on these layers, Mamba2 on the others; muP multipliers; RoPE only
  // with rope_positions (position_embedding_type "rope"; the -H models are "nope")
  std::vector<int> attention_layers;
  double embedding_multiplier = 1.0, residual_multiplier = 1.0, attention_multiplier = 1.0;
  double logits_scaling = 1.0;
  bool rope_positions = false;
  // lfm2: attention on attention_layers, gated short conv (conv_kernel) elsewhere; config.json
  // names the MLP width as block_ff_dim before its auto-adjustment (d_ff is the adjusted width)
  int block_ff_dim = 0, block_multiple_of = 0;
  bool conv_bias = false;
  bool lfm2_5_keys = false;  // LFM2.5's config spelling (layer_types, rope_parameters, ...)
  int dense_layers = 0;      // lfm2_moe: num_dense_layers (then experts)
  // nemotron_h: one block per layer, M (Mamba2), * (attention), - (ReLU² MLP) or E (n_experts
  // ReLU² experts of moe_d_ff beside a shared one of shared_d_ff); the router's DeepSeek-V3
  // groups (n_group, topk_group) and routed_scaling_factor
  std::string block_pattern;
  int expert_groups = 1, topk_groups = 1;
  double routed_scaling = 1.0;
  // falcon_h1: attention and Mamba2 side by side in every layer (ssm_d_inner() is its
  // mamba_d_ssm); its muP multipliers besides embedding_multiplier; the mixer's optional norm
  double lm_head_multiplier = 1.0, key_multiplier = 1.0, attention_in_multiplier = 1.0;
  double attention_out_multiplier = 1.0, ssm_in_multiplier = 1.0, ssm_out_multiplier = 1.0;
  std::vector<double> mlp_multipliers, ssm_multipliers;  // [gate, down], [z, x, B, C, dt]
  bool mamba_rms_norm = false, mamba_norm_before_gate = false;
  bool mamba_proj_bias = false;  // granitemoehybrid: the Mamba2 in_proj and out_proj biases
  // gpt_oss: experts (n_experts, experts_per_tok) of width d_ff; YaRN RoPE (rope_factor,
  // rope_original_max_position); sliding_window on the even layers; the activation's clamp
  double swiglu_limit = 0.0;
  // smollm3: no_rope_layers as written (1 = RoPE, 0 = NoPE; empty: the key left out, the
  // interval-4 default); use_sliding_window with sliding_window (NoPE layers slide)
  std::vector<int> no_rope_layers;
  bool use_sliding_window = false;

  bool is_full_attention(int layer) const;  // qwen3_5 / gemma3 schedule; qwen3: every layer
  bool is_sparse(int layer) const;          // qwen3_moe: experts rather than a dense MLP
  int lin_conv_dim() const { return 2 * lin_k_heads * lin_k_dim + lin_v_heads * lin_v_dim; }
  int ssm_d_inner() const { return ssm_heads * ssm_head_dim; }
  int ssm_conv_dim() const { return ssm_d_inner() + 2 * ssm_groups * ssm_state; }
};

// Ids of the added tokens the config files name.
struct SpecialIds {
  int endoftext = 0;
  int im_start = 0;
  int im_end = 0;
  // Llama 3 (LFM2: begin_of_text is <|startoftext|>)
  int begin_of_text = 0, end_of_text = 0, eom = 0, eot = 0;
  // Granite 4.0 (<|end_of_text|> is end_of_text above)
  int pad = 0;
  // gpt-oss's harmony tokens (<|startoftext|> is begin_of_text, <|endoftext|> endoftext,
  // <|return|> eot, <|call|> eom above)
  int start = 0, end = 0, message = 0, channel = 0;
};

struct BpeTokenizer;
// A family's generator in one module (generator.h FamilyRecord::files): its preset geometries,
// config files, byte-level BPE tokenizer and chat template (written as chat_template.jinja).
struct FamilyFiles {
  // The geometry of "tiny" or one of the record's presets.
  Geometry (*geometry)(std::string_view preset);
  std::string (*config_json)(const Geometry& g, DType dtype, const SpecialIds& ids);
  std::string (*generation_config_json)(const SpecialIds& ids);
  const BpeTokenizer& (*tokenizer)(std::string_view preset);
  std::string (*tokenizer_json)(const BpeTokenizer& tok);
  std::string (*tokenizer_config_json)(const BpeTokenizer& tok, int max_position);
  std::string_view chat_template;  // fixtures/chat_templates/<name>.jinja
};
extern const FamilyFiles kGptOssFiles;   // gpt_oss_gen.cc
extern const FamilyFiles kSmolLm3Files;  // smollm3_gen.cc

// The preset's geometry with spec's overrides applied; n_tokens is the tokenizer's size, which
// the embedding must cover.
Result<Geometry> resolve_geometry(const GenSpec& spec, int n_tokens);

enum class InitKind {
  kNormal,      // mean + std * N(0, 1)
  kLogUniform,  // log(U(lo, hi)): A_log
  kDtBias,      // inverse softplus of dt = exp(U(log lo, log hi)): mamba dt_bias
  kUniformInt,  // an integer of [lo, hi], uniformly: MXFP4's blocks and scales (U8)
};

struct Init {
  InitKind kind = InitKind::kNormal;
  double a = 0.0;  // mean, or lo
  double b = 0.0;  // std, or hi
};

struct GenTensor {
  TensorEntry entry;
  Init init;
  std::string key;  // seeds the values; a tied copy uses the name of the tensor it copies
};

// Every tensor of the checkpoint: the model's own list for the geometry's config.json
// (model::tensors_from_config) in the order its family visits them, each with its initialisation
// (tensor_inits.cc).
// An error when the geometry's config.json is one the model refuses (overrides such as
// --hidden-size can make one), naming what it refuses.
Result<std::vector<GenTensor>> tensor_table(const Geometry& g, DType dtype);

// config.json's torch_dtype word: "bfloat16", "float16", "float32".
const char* torch_dtype(DType dtype);
std::string config_json(const Geometry& g, DType dtype, const SpecialIds& ids);
std::string generation_config_json(const Geometry& g, const SpecialIds& ids);
// The hybrids' files (config_files_hybrid.cc), reached through the two above.
std::string granite_hybrid_config_json(const Geometry& g, DType dtype, const SpecialIds& ids);
std::string granite_hybrid_generation_config_json(const SpecialIds& ids);
std::string nemotron_h_config_json(const Geometry& g, DType dtype, const SpecialIds& ids);
std::string nemotron_h_generation_config_json(const SpecialIds& ids);
std::string falcon_h1_config_json(const Geometry& g, DType dtype, const SpecialIds& ids);
std::string lfm2_moe_config_json(const Geometry& g, DType dtype, const SpecialIds& ids);
std::string falcon_h1_generation_config_json(const SpecialIds& ids);

}  // namespace recur::modelgen
