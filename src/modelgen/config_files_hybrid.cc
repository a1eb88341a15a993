// config.json and generation_config.json of the generated Mamba2 hybrids, with the real files'
// field names (docs/model-granite.md): granite-4.0-h-350m's; Falcon-H1-0.5B-Instruct's
// (docs/model-falcon-h1.md names the fields verified and those inferred). Keys sorted, indented by
// 2.
#include <nlohmann/json.hpp>

#include "modelgen/families.h"

namespace recur::modelgen {

namespace {

using Json = nlohmann::json;

}  // namespace

std::string granite_hybrid_config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json layer_types = Json::array();
  for (int i = 0; i < g.n_layers; ++i) {
    layer_types.push_back(g.is_full_attention(i) ? "attention" : "mamba");
  }
  const Json j = {{"architectures", {"GraniteMoeHybridForCausalLM"}},
                  {"attention_bias", false},
                  {"attention_dropout", 0.0},
                  {"attention_multiplier", g.attention_multiplier},
                  {"bos_token_id", ids.end_of_text},
                  {"embedding_multiplier", g.embedding_multiplier},
                  {"eos_token_id", ids.end_of_text},
                  {"hidden_act", "silu"},
                  {"hidden_size", g.d_model},
                  {"initializer_range", 0.1},
                  {"intermediate_size", g.n_experts > 0 ? g.moe_d_ff : g.d_ff},
                  {"layer_types", std::move(layer_types)},
                  {"logits_scaling", g.logits_scaling},
                  {"mamba_chunk_size", 256},
                  {"mamba_conv_bias", true},
                  {"mamba_d_conv", g.conv_kernel},
                  {"mamba_d_head", g.ssm_head_dim},
                  {"mamba_d_state", g.ssm_state},
                  {"mamba_expand", g.expand},
                  {"mamba_n_groups", g.ssm_groups},
                  {"mamba_n_heads", g.ssm_heads},
                  {"mamba_proj_bias", g.mamba_proj_bias},
                  {"max_position_embeddings", g.max_position},
                  {"model_type", "granitemoehybrid"},
                  {"normalization_function", "rmsnorm"},
                  {"num_attention_heads", g.n_heads},
                  {"num_experts_per_tok", g.experts_per_tok},
                  {"num_hidden_layers", g.n_layers},
                  {"num_key_value_heads", g.n_kv_heads},
                  {"num_local_experts", g.n_experts},
                  {"output_router_logits", false},
                  {"pad_token_id", ids.pad},
                  {"position_embedding_type", g.rope_positions ? "rope" : "nope"},
                  {"residual_multiplier", g.residual_multiplier},
                  {"rms_norm_eps", g.norm_eps},
                  {"rope_scaling", nullptr},
                  {"rope_theta", static_cast<std::int64_t>(g.rope_theta)},
                  {"router_aux_loss_coef", 0.01},
                  {"shared_intermediate_size", g.d_ff},
                  {"tie_word_embeddings", g.tied},
                  {"torch_dtype", torch_dtype(dtype)},
                  {"transformers_version", "4.56.0"},
                  {"use_cache", true},
                  {"vocab_size", g.vocab_size}};
  return j.dump(2) + "\n";
}

// LiquidAI/LFM2-8B-A1B's config.json (docs/model-lfm2.md says which fields are verified where):
// Lfm2MoeConfig's keys, layer_types, a top-level rope_theta.
std::string lfm2_moe_config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json types = Json::array();
  for (int i = 0; i < g.n_layers; ++i) {
    types.push_back(g.is_full_attention(i) ? "full_attention" : "conv");
  }
  Json j = {{"architectures", {"Lfm2MoeForCausalLM"}},
            {"bos_token_id", ids.begin_of_text},
            {"conv_L_cache", g.conv_kernel},
            {"conv_bias", g.conv_bias},
            {"dtype", torch_dtype(dtype)},
            {"eos_token_id", ids.im_end},
            {"hidden_size", g.d_model},
            {"initializer_range", 0.02},
            {"intermediate_size", g.d_ff},
            {"layer_types", std::move(types)},
            {"max_position_embeddings", g.max_position},
            {"model_type", "lfm2_moe"},
            {"moe_intermediate_size", g.moe_d_ff},
            {"norm_eps", g.norm_eps},
            {"norm_topk_prob", g.norm_topk_prob},
            {"num_attention_heads", g.n_heads},
            {"num_dense_layers", g.dense_layers},
            {"num_experts", g.n_experts},
            {"num_experts_per_tok", g.experts_per_tok},
            {"num_hidden_layers", g.n_layers},
            {"num_key_value_heads", g.n_kv_heads},
            {"pad_token_id", 0},
            {"rope_theta", g.rope_theta},
            {"routed_scaling_factor", 1.0},
            {"tie_word_embeddings", g.tied},
            {"transformers_version", "4.57.0.dev0"},
            {"use_cache", true},
            {"use_expert_bias", true},
            {"vocab_size", g.vocab_size}};
  if (g.head_dim * g.n_heads != g.d_model) j["head_dim"] = g.head_dim;
  return j.dump(2) + "\n";
}

std::string falcon_h1_config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  const Json j = {{"architectures", {"FalconH1ForCausalLM"}},
                  {"attention_bias", false},
                  {"attention_dropout", 0.0},
                  {"attention_in_multiplier", g.attention_in_multiplier},
                  {"attention_out_multiplier", g.attention_out_multiplier},
                  {"attn_layer_indices", nullptr},
                  {"bos_token_id", ids.begin_of_text},
                  {"embedding_multiplier", g.embedding_multiplier},
                  {"eos_token_id", ids.end_of_text},
                  {"head_dim", g.head_dim},
                  {"hidden_act", "silu"},
                  {"hidden_size", g.d_model},
                  {"initializer_range", 0.02},
                  {"intermediate_size", g.d_ff},
                  {"key_multiplier", g.key_multiplier},
                  {"lm_head_multiplier", g.lm_head_multiplier},
                  {"mamba_chunk_size", 128},
                  {"mamba_conv_bias", true},
                  {"mamba_d_conv", g.conv_kernel},
                  {"mamba_d_head", g.ssm_head_dim},
                  {"mamba_d_ssm", g.ssm_d_inner()},
                  {"mamba_d_state", g.ssm_state},
                  {"mamba_expand", g.expand},
                  {"mamba_n_groups", g.ssm_groups},
                  {"mamba_n_heads", g.ssm_heads},
                  {"mamba_norm_before_gate", g.mamba_norm_before_gate},
                  {"mamba_proj_bias", false},
                  {"mamba_rms_norm", g.mamba_rms_norm},
                  {"mamba_use_mlp", true},
                  {"max_position_embeddings", g.max_position},
                  {"mlp_bias", false},
                  {"mlp_multipliers", g.mlp_multipliers},
                  {"model_type", "falcon_h1"},
                  {"num_attention_heads", g.n_heads},
                  {"num_hidden_layers", g.n_layers},
                  {"num_key_value_heads", g.n_kv_heads},
                  {"num_logits_to_keep", 1},
                  {"pad_token_id", ids.pad},
                  {"projectors_bias", false},
                  {"rms_norm_eps", g.norm_eps},
                  {"rope_scaling", nullptr},
                  {"rope_theta", g.rope_theta},
                  {"ssm_in_multiplier", g.ssm_in_multiplier},
                  {"ssm_multipliers", g.ssm_multipliers},
                  {"ssm_out_multiplier", g.ssm_out_multiplier},
                  {"tie_word_embeddings", g.tied},
                  {"torch_dtype", torch_dtype(dtype)},
                  {"transformers_version", "4.52.0"},
                  {"use_cache", true},
                  {"vocab_size", g.vocab_size}};
  return j.dump(2) + "\n";
}

std::string falcon_h1_generation_config_json(const SpecialIds& ids) {
  const Json j = {{"bos_token_id", ids.begin_of_text},
                  {"eos_token_id", {ids.end_of_text, ids.im_end}},
                  {"pad_token_id", ids.pad},
                  {"transformers_version", "4.52.0"}};
  return j.dump(2) + "\n";
}

std::string granite_hybrid_generation_config_json(const SpecialIds& ids) {
  const Json j = {{"bos_token_id", ids.end_of_text},
                  {"eos_token_id", ids.end_of_text},
                  {"pad_token_id", ids.pad},
                  {"transformers_version", "4.56.0"}};
  return j.dump(2) + "\n";
}

namespace {

// NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's config.json field for field (transformers 4.55 era: no
// time_step_limit, which defaults to [0, inf]; rope_theta and partial_rotary_factor unused).
std::string nemotron_h_moe_config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  const Json j = {{"architectures", {"NemotronHForCausalLM"}},
                  {"attention_bias", false},
                  {"attention_dropout", 0.0},
                  {"bos_token_id", ids.begin_of_text},
                  {"chunk_size", 128},
                  {"conv_kernel", g.conv_kernel},
                  {"eos_token_id", ids.end_of_text},
                  {"expand", g.expand},
                  {"head_dim", g.head_dim},
                  {"hidden_dropout", 0.0},
                  {"hidden_size", g.d_model},
                  {"hybrid_override_pattern", g.block_pattern},
                  {"initializer_range", 0.02},
                  {"intermediate_size", g.d_ff},
                  {"layer_norm_epsilon", g.norm_eps},
                  {"mamba_head_dim", g.ssm_head_dim},
                  {"mamba_hidden_act", "silu"},
                  {"mamba_num_heads", g.ssm_heads},
                  {"mamba_proj_bias", false},
                  {"mamba_ssm_cache_dtype", "float32"},
                  {"max_position_embeddings", g.max_position},
                  {"mlp_bias", false},
                  {"mlp_hidden_act", "relu2"},
                  {"model_type", "nemotron_h"},
                  {"moe_intermediate_size", g.moe_d_ff},
                  {"moe_shared_expert_intermediate_size", g.shared_d_ff},
                  {"n_group", g.expert_groups},
                  {"n_groups", g.ssm_groups},
                  {"n_routed_experts", g.n_experts},
                  {"n_shared_experts", 1},
                  {"norm_eps", g.norm_eps},
                  {"norm_topk_prob", g.norm_topk_prob},
                  {"num_attention_heads", g.n_heads},
                  {"num_experts_per_tok", g.experts_per_tok},
                  {"num_hidden_layers", g.n_layers},
                  {"num_key_value_heads", g.n_kv_heads},
                  {"num_logits_to_keep", 1},
                  {"pad_token_id", ids.pad},
                  {"partial_rotary_factor", 1.0},
                  {"rescale_prenorm_residual", true},
                  {"residual_in_fp32", false},
                  {"rope_theta", 10000},
                  {"routed_scaling_factor", g.routed_scaling},
                  {"sliding_window", nullptr},
                  {"ssm_state_size", g.ssm_state},
                  {"tie_word_embeddings", g.tied},
                  {"time_step_floor", 0.0001},
                  {"time_step_max", 0.1},
                  {"time_step_min", 0.001},
                  {"topk_group", g.topk_groups},
                  {"torch_dtype", torch_dtype(dtype)},
                  {"transformers_version", "4.55.4"},
                  {"use_bias", false},
                  {"use_cache", true},
                  {"use_conv_bias", true},
                  {"use_mamba_kernels", true},
                  {"vocab_size", g.vocab_size}};
  return j.dump(2) + "\n";
}

}  // namespace

// Nemotron-H-4B's config.json (the remote-code era field names the released files carry), with
// head_dim, the key transformers reads, for the file's attention_head_dim.
// time_step_limit holds Python's bare Infinity, put in after dumping.
std::string nemotron_h_config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  if (g.n_experts > 0) return nemotron_h_moe_config_json(g, dtype, ids);
  constexpr const char* kInf = "__recur_infinity__";
  const Json j = {{"architectures", {"NemotronHForCausalLM"}},
                  {"attention_bias", false},
                  {"attention_dropout", 0.0},
                  {"bos_token_id", ids.begin_of_text},
                  {"chunk_size", 128},
                  {"conv_kernel", g.conv_kernel},
                  {"eos_token_id", ids.im_end},
                  {"expand", g.expand},
                  {"hidden_dropout", 0.0},
                  {"head_dim", g.head_dim},
                  {"hidden_size", g.d_model},
                  {"hybrid_override_pattern", g.block_pattern},
                  {"initializer_range", 0.02},
                  {"intermediate_size", g.d_ff},
                  {"layer_norm_epsilon", g.norm_eps},
                  {"mamba_head_dim", g.ssm_head_dim},
                  {"mamba_hidden_act", "silu"},
                  {"mamba_num_heads", g.ssm_heads},
                  {"mamba_proj_bias", false},
                  {"max_position_embeddings", g.max_position},
                  {"mlp_bias", false},
                  {"mlp_hidden_act", "relu2"},
                  {"model_type", "nemotron_h"},
                  {"n_groups", g.ssm_groups},
                  {"num_attention_heads", g.n_heads},
                  {"num_hidden_layers", g.n_layers},
                  {"num_key_value_heads", g.n_kv_heads},
                  {"num_logits_to_keep", 1},
                  {"pad_token_id", ids.pad},
                  {"rescale_prenorm_residual", true},
                  {"residual_in_fp32", false},
                  {"rms_norm_eps", g.norm_eps},
                  {"ssm_state_size", g.ssm_state},
                  {"tie_word_embeddings", g.tied},
                  {"time_step_floor", 0.0001},
                  {"time_step_limit", {0.0, kInf}},
                  {"time_step_max", 0.1},
                  {"time_step_min", 0.001},
                  {"torch_dtype", torch_dtype(dtype)},
                  {"transformers_version", "4.48.0.dev0"},
                  {"use_bias", false},
                  {"use_cache", true},
                  {"use_conv_bias", true},
                  {"use_mamba_kernels", true},
                  {"vocab_size", g.vocab_size}};
  std::string text = j.dump(2) + "\n";
  const std::string quoted = std::string("\"") + kInf + "\"";
  text.replace(text.find(quoted), quoted.size(), "Infinity");
  return text;
}

std::string nemotron_h_generation_config_json(const SpecialIds& ids) {
  const Json j = {{"bos_token_id", ids.begin_of_text},
                  {"eos_token_id", {ids.im_end, ids.end_of_text}},
                  {"pad_token_id", ids.pad},
                  {"transformers_version", "4.48.0.dev0"}};
  return j.dump(2) + "\n";
}

}  // namespace recur::modelgen
