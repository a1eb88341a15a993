// config.json and generation_config.json of generated checkpoints, with the real files' field
// names and nesting (model-families.md 1.1, 2.1, 4.1; Llama 3.2 1B's for llama). Keys are sorted
// and indented by 2, as transformers writes them.
#include <nlohmann/json.hpp>

#include "modelgen/families.h"

namespace recur::modelgen {

const char* torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    case DType::kF32:
      return "float32";
  }
  return "?";
}

namespace {

using Json = nlohmann::json;

Json qwen3_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  return {{"architectures", {"Qwen3ForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", ids.endoftext},
          {"eos_token_id", ids.im_end},
          {"head_dim", g.head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", g.d_model},
          {"initializer_range", 0.02},
          {"intermediate_size", g.d_ff},
          {"max_position_embeddings", g.max_position},
          {"max_window_layers", g.n_layers},
          {"model_type", "qwen3"},
          {"num_attention_heads", g.n_heads},
          {"num_hidden_layers", g.n_layers},
          {"num_key_value_heads", g.n_kv_heads},
          {"rms_norm_eps", g.norm_eps},
          {"rope_scaling", nullptr},
          {"rope_theta", static_cast<std::int64_t>(g.rope_theta)},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", true},
          {"torch_dtype", torch_dtype(dtype)},
          {"transformers_version", "4.51.0"},
          {"use_cache", true},
          {"use_sliding_window", false},
          {"vocab_size", g.vocab_size}};
}

Json qwen3_5_text_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json layer_types = Json::array();
  for (int i = 0; i < g.n_layers; ++i) {
    layer_types.push_back(g.is_full_attention(i) ? "full_attention" : "linear_attention");
  }
  const Json rope = {{"mrope_interleaved", true},
                     {"mrope_section", {11, 11, 10}},
                     {"partial_rotary_factor", g.partial_rotary_factor},
                     {"rope_theta", static_cast<std::int64_t>(g.rope_theta)},
                     {"rope_type", "default"}};
  return {{"attention_bias", false},
          {"attention_dropout", 0.0},
          {"attn_output_gate", true},
          {"bos_token_id", nullptr},
          {"dtype", torch_dtype(dtype)},
          {"eos_token_id", ids.endoftext},
          {"full_attention_interval", g.full_attention_interval},
          {"head_dim", g.head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", g.d_model},
          {"initializer_range", 0.02},
          {"intermediate_size", g.d_ff},
          {"layer_types", layer_types},
          {"linear_conv_kernel_dim", g.conv_kernel},
          {"linear_key_head_dim", g.lin_k_dim},
          {"linear_num_key_heads", g.lin_k_heads},
          {"linear_num_value_heads", g.lin_v_heads},
          {"linear_value_head_dim", g.lin_v_dim},
          {"mamba_ssm_dtype", "float32"},
          {"max_position_embeddings", g.max_position},
          {"mlp_only_layers", Json::array()},
          {"model_type", "qwen3_5_text"},
          {"mtp_num_hidden_layers", 0},  // the generator writes no mtp.* tensors
          {"mtp_use_dedicated_embeddings", false},
          {"num_attention_heads", g.n_heads},
          {"num_hidden_layers", g.n_layers},
          {"num_key_value_heads", g.n_kv_heads},
          {"pad_token_id", nullptr},
          {"partial_rotary_factor", g.partial_rotary_factor},
          {"rms_norm_eps", g.norm_eps},
          {"rope_parameters", rope},
          {"tie_word_embeddings", true},
          {"use_cache", true},
          {"vocab_size", g.vocab_size}};
}

// The vision tower is not generated, so vision_config and the image/video token ids are left out.
Json qwen3_5_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  return {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
          {"model_type", "qwen3_5"},
          {"text_config", qwen3_5_text_config(g, dtype, ids)},
          {"tie_word_embeddings", true},
          {"transformers_version", "5.7.0"}};
}

// Qwen/Qwen3.5-35B-A3B's config.json (its text part): Qwen3.5's text_config with the MoE keys in
// place of intermediate_size, an untied head. No decoder_sparse_step or norm_topk_prob: every layer
// is sparse and the router always renormalises.
Json qwen3_5_moe_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json text = qwen3_5_text_config(g, dtype, ids);
  text.erase("intermediate_size");
  text["model_type"] = "qwen3_5_moe_text";
  text["moe_intermediate_size"] = g.moe_d_ff;
  text["num_experts"] = g.n_experts;
  text["num_experts_per_tok"] = g.experts_per_tok;
  text["output_router_logits"] = false;
  text["router_aux_loss_coef"] = 0.001;
  text["shared_expert_intermediate_size"] = g.shared_d_ff;
  text["tie_word_embeddings"] = g.tied;
  return {{"architectures", {"Qwen3_5MoeForConditionalGeneration"}},
          {"model_type", "qwen3_5_moe"},
          {"text_config", text},
          {"tie_word_embeddings", g.tied},
          {"transformers_version", "4.57.0.dev0"}};
}

// Qwen/Qwen3-Next-80B-A3B-Instruct's config.json, field for field (spec 3.1).
Json qwen3_next_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  return {{"architectures", {"Qwen3NextForCausalLM"}},
          {"attention_dropout", 0.0},
          {"bos_token_id", ids.endoftext},
          {"decoder_sparse_step", g.sparse_step},
          {"eos_token_id", ids.im_end},
          {"full_attention_interval", g.full_attention_interval},
          {"head_dim", g.head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", g.d_model},
          {"initializer_range", 0.02},
          {"intermediate_size", g.d_ff},
          {"linear_conv_kernel_dim", g.conv_kernel},
          {"linear_key_head_dim", g.lin_k_dim},
          {"linear_num_key_heads", g.lin_k_heads},
          {"linear_num_value_heads", g.lin_v_heads},
          {"linear_value_head_dim", g.lin_v_dim},
          {"max_position_embeddings", g.max_position},
          {"mlp_only_layers", g.mlp_only_layers},
          {"model_type", "qwen3_next"},
          {"moe_intermediate_size", g.moe_d_ff},
          {"norm_topk_prob", g.norm_topk_prob},
          {"num_attention_heads", g.n_heads},
          {"num_experts", g.n_experts},
          {"num_experts_per_tok", g.experts_per_tok},
          {"num_hidden_layers", g.n_layers},
          {"num_key_value_heads", g.n_kv_heads},
          {"output_router_logits", false},
          {"partial_rotary_factor", g.partial_rotary_factor},
          {"rms_norm_eps", g.norm_eps},
          {"rope_scaling", nullptr},
          {"rope_theta", static_cast<std::int64_t>(g.rope_theta)},
          {"router_aux_loss_coef", 0.001},
          {"shared_expert_intermediate_size", g.shared_d_ff},
          {"tie_word_embeddings", g.tied},
          {"torch_dtype", torch_dtype(dtype)},
          {"transformers_version", "4.57.0.dev0"},
          {"use_cache", true},
          {"use_sliding_window", false},
          {"vocab_size", g.vocab_size}};
}

// google/gemma-3-1b-it's config.json (sliding_window_pattern); gemma-3-270m and tiny write
// layer_types instead, as transformers 4.53+ does.
Json gemma3_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json j = {{"architectures", {"Gemma3ForCausalLM"}},
            {"attention_bias", false},
            {"attention_dropout", 0.0},
            {"attn_logit_softcapping", nullptr},
            {"bos_token_id", 2},
            {"cache_implementation", "hybrid"},
            {"eos_token_id", {ids.endoftext, ids.im_end}},
            {"final_logit_softcapping", nullptr},
            {"head_dim", g.head_dim},
            {"hidden_activation", "gelu_pytorch_tanh"},
            {"hidden_size", g.d_model},
            {"initializer_range", 0.02},
            {"intermediate_size", g.d_ff},
            {"max_position_embeddings", g.max_position},
            {"model_type", "gemma3_text"},
            {"num_attention_heads", g.n_heads},
            {"num_hidden_layers", g.n_layers},
            {"num_key_value_heads", g.n_kv_heads},
            {"pad_token_id", 0},
            {"query_pre_attn_scalar", g.query_pre_attn_scalar},
            {"rms_norm_eps", g.norm_eps},
            {"rope_local_base_freq", g.rope_local_theta},
            {"rope_scaling", nullptr},
            {"rope_theta", g.rope_theta},
            {"sliding_window", g.sliding_window},
            {"torch_dtype", torch_dtype(dtype)},
            {"transformers_version", "4.50.0.dev0"},
            {"use_cache", true},
            {"vocab_size", g.vocab_size}};
  if (g.layer_types) {
    Json types = Json::array();
    for (int i = 0; i < g.n_layers; ++i) {
      types.push_back(g.is_full_attention(i) ? "full_attention" : "sliding_attention");
    }
    j["layer_types"] = types;
    j["_sliding_window_pattern"] = g.sliding_pattern;
    j["transformers_version"] = "4.55.0.dev0";
  } else {
    j["sliding_window_pattern"] = g.sliding_pattern;
  }
  if (g.rope_linear_factor > 0.0) {
    j["rope_scaling"] = {{"factor", g.rope_linear_factor}, {"rope_type", "linear"}};
  }
  if (g.final_softcap > 0.0) j["final_logit_softcapping"] = g.final_softcap;
  return j;
}

// meta-llama/Llama-3.2-1B-Instruct's config.json, field for field (tiny-bias: Llama 2's layout,
// no head_dim and no rope_scaling).
Json llama_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  Json j = {{"architectures", {"LlamaForCausalLM"}},
            {"attention_bias", g.attention_bias},
            {"attention_dropout", 0.0},
            {"bos_token_id", ids.begin_of_text},
            {"eos_token_id", {ids.end_of_text, ids.eom, ids.eot}},
            {"hidden_act", "silu"},
            {"hidden_size", g.d_model},
            {"initializer_range", 0.02},
            {"intermediate_size", g.d_ff},
            {"max_position_embeddings", g.max_position},
            {"mlp_bias", g.mlp_bias},
            {"model_type", "llama"},
            {"num_attention_heads", g.n_heads},
            {"num_hidden_layers", g.n_layers},
            {"num_key_value_heads", g.n_kv_heads},
            {"pretraining_tp", 1},
            {"rms_norm_eps", g.norm_eps},
            {"rope_scaling", nullptr},
            {"rope_theta", g.rope_theta},
            {"tie_word_embeddings", g.tied},
            {"torch_dtype", torch_dtype(dtype)},
            {"transformers_version", "4.45.0.dev0"},
            {"use_cache", true},
            {"vocab_size", g.vocab_size}};
  if (g.head_dim_key) j["head_dim"] = g.head_dim;
  if (g.rope_factor > 0.0) {
    j["rope_scaling"] = {{"factor", g.rope_factor},
                         {"high_freq_factor", g.rope_high_freq_factor},
                         {"low_freq_factor", g.rope_low_freq_factor},
                         {"original_max_position_embeddings", g.rope_original_max_position},
                         {"rope_type", "llama3"}};
  }
  return j;
}

// Qwen/Qwen3-30B-A3B's config.json, field for field.
Json qwen3_moe_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  return {{"architectures", {"Qwen3MoeForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", ids.endoftext},
          {"decoder_sparse_step", g.sparse_step},
          {"eos_token_id", ids.im_end},
          {"head_dim", g.head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", g.d_model},
          {"initializer_range", 0.02},
          {"intermediate_size", g.d_ff},
          {"max_position_embeddings", g.max_position},
          {"max_window_layers", g.n_layers},
          {"mlp_only_layers", g.mlp_only_layers},
          {"model_type", "qwen3_moe"},
          {"moe_intermediate_size", g.moe_d_ff},
          {"norm_topk_prob", g.norm_topk_prob},
          {"num_attention_heads", g.n_heads},
          {"num_experts", g.n_experts},
          {"num_experts_per_tok", g.experts_per_tok},
          {"num_hidden_layers", g.n_layers},
          {"num_key_value_heads", g.n_kv_heads},
          {"output_router_logits", false},
          {"rms_norm_eps", g.norm_eps},
          {"rope_scaling", nullptr},
          {"rope_theta", g.rope_theta},
          {"router_aux_loss_coef", 0.001},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", g.tied},
          {"torch_dtype", torch_dtype(dtype)},
          {"transformers_version", "4.51.0"},
          {"use_cache", true},
          {"use_sliding_window", false},
          {"vocab_size", g.vocab_size}};
}

// LiquidAI/LFM2-350M's config.json (block_* keys, full_attn_idxs, rope_theta), or with
// lfm2_5_keys LFM2.5's spelling (layer_types, rope_parameters, tie_embedding, dtype, and
// intermediate_size beside block_ff_dim). A geometry whose d_ff is not block_ff_dim adjusted
// (a --hidden-size override) is written with block_auto_adjust_ff_dim false.
Json lfm2_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  const int adjusted = (2 * g.block_ff_dim / 3 + g.block_multiple_of - 1) / g.block_multiple_of *
                       g.block_multiple_of;
  const bool adjust = g.block_ff_dim > 0 && adjusted == g.d_ff;
  const int ff = adjust ? g.block_ff_dim : g.d_ff;
  Json j = {{"architectures", {"Lfm2ForCausalLM"}},
            {"block_auto_adjust_ff_dim", adjust},
            {"block_dim", g.d_model},
            {"block_ff_dim", ff},
            {"block_ffn_dim_multiplier", 1.0},
            {"block_mlp_init_scale", 1.0},
            {"block_multiple_of", g.block_multiple_of},
            {"block_norm_eps", g.norm_eps},
            {"block_out_init_scale", 1.0},
            {"block_use_swiglu", true},
            {"block_use_xavier_init", true},
            {"bos_token_id", ids.begin_of_text},
            {"conv_L_cache", g.conv_kernel},
            {"conv_bias", g.conv_bias},
            {"conv_dim", g.d_model},
            {"conv_dim_out", g.d_model},
            {"conv_use_xavier_init", true},
            {"eos_token_id", ids.im_end},
            {"hidden_size", g.d_model},
            {"initializer_range", 0.02},
            {"max_position_embeddings", g.max_position},
            {"model_type", "lfm2"},
            {"norm_eps", g.norm_eps},
            {"num_attention_heads", g.n_heads},
            {"num_heads", g.n_heads},
            {"num_hidden_layers", g.n_layers},
            {"num_key_value_heads", g.n_kv_heads},
            {"pad_token_id", 0},
            {"use_cache", true},
            {"use_pos_enc", true},
            {"vocab_size", g.vocab_size}};
  if (g.head_dim * g.n_heads != g.d_model) j["head_dim"] = g.head_dim;
  if (!g.tied) j["tie_embedding"] = false;
  std::vector<int> attention;
  Json types = Json::array();
  for (int i = 0; i < g.n_layers; ++i) {
    if (g.is_full_attention(i)) attention.push_back(i);
    types.push_back(g.is_full_attention(i) ? "full_attention" : "conv");
  }
  if (!g.lfm2_5_keys) {
    j["full_attn_idxs"] = attention;
    j["rope_theta"] = g.rope_theta;
    j["torch_dtype"] = torch_dtype(dtype);
    j["transformers_version"] = "4.54.0.dev0";
    return j;
  }
  j.erase("conv_dim_out");
  j["dtype"] = torch_dtype(dtype);
  j["intermediate_size"] = ff;
  j["layer_types"] = types;
  j["rope_parameters"] = {{"rope_theta", g.rope_theta}, {"rope_type", "default"}};
  j["tie_embedding"] = g.tied;
  j["transformers_version"] = "5.0.0";
  return j;
}

// time_step_limit is written as a placeholder string and replaced by the bare Infinity that
// Python's json module writes (invalid JSON, which loaders must accept).
constexpr const char* kInfinityPlaceholder = "__recur_infinity__";

Json mamba2_config(const Geometry& g, DType dtype, const SpecialIds& ids) {
  return {{"architectures", {"Mamba2ForCausalLM"}},
          {"bos_token_id", ids.endoftext},
          {"chunk_size", 256},
          {"conv_kernel", g.conv_kernel},
          {"eos_token_id", ids.endoftext},
          {"expand", g.expand},
          {"head_dim", g.ssm_head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", g.d_model},
          {"initializer_range", 0.1},
          {"layer_norm_epsilon", g.norm_eps},
          {"model_type", "mamba2"},
          {"n_groups", g.ssm_groups},
          {"num_heads", g.ssm_heads},
          {"num_hidden_layers", g.n_layers},
          {"pad_token_id", ids.endoftext},
          {"rescale_prenorm_residual", false},
          {"residual_in_fp32", true},
          {"rms_norm", true},
          {"state_size", g.ssm_state},
          {"tie_word_embeddings", true},
          {"time_step_floor", 0.0001},
          {"time_step_limit", {0.0, kInfinityPlaceholder}},
          {"time_step_max", 0.1},
          {"time_step_min", 0.001},
          {"time_step_rank", (g.d_model + 15) / 16},
          {"torch_dtype", torch_dtype(dtype)},
          {"transformers_version", "4.44.0"},
          {"use_bias", false},
          {"use_cache", true},
          {"use_conv_bias", true},
          {"vocab_size", g.vocab_size}};
}

}  // namespace

std::string config_json(const Geometry& g, DType dtype, const SpecialIds& ids) {
  if (const FamilyFiles* files = family_record(g.family).files) {
    return files->config_json(g, dtype, ids);
  }
  switch (g.family) {
    case Family::kQwen3:
      return qwen3_config(g, dtype, ids).dump(2) + "\n";
    case Family::kQwen3_5:
      return qwen3_5_config(g, dtype, ids).dump(2) + "\n";
    case Family::kLlama:
      return llama_config(g, dtype, ids).dump(2) + "\n";
    case Family::kGemma3:
      return gemma3_config(g, dtype, ids).dump(2) + "\n";
    case Family::kQwen3Moe:
      return qwen3_moe_config(g, dtype, ids).dump(2) + "\n";
    case Family::kGraniteHybrid:
    case Family::kGraniteMoe:
      return granite_hybrid_config_json(g, dtype, ids);
    case Family::kLfm2:
      return lfm2_config(g, dtype, ids).dump(2) + "\n";
    case Family::kLfm2Moe:
      return lfm2_moe_config_json(g, dtype, ids);
    case Family::kNemotronH:
      return nemotron_h_config_json(g, dtype, ids);
    case Family::kFalconH1:
      return falcon_h1_config_json(g, dtype, ids);
    case Family::kQwen3_5Moe:
      return qwen3_5_moe_config(g, dtype, ids).dump(2) + "\n";
    case Family::kQwen3Next:
      return qwen3_next_config(g, dtype, ids).dump(2) + "\n";
    case Family::kMamba2: {
      std::string text = mamba2_config(g, dtype, ids).dump(2) + "\n";
      const std::string quoted = fmt::format("\"{}\"", kInfinityPlaceholder);
      text.replace(text.find(quoted), quoted.size(), "Infinity");
      return text;
    }
    case Family::kGptOss:  // FamilyFiles
    case Family::kSmolLm3:
      break;
  }
  return {};
}

std::string generation_config_json(const Geometry& g, const SpecialIds& ids) {
  if (const FamilyFiles* files = family_record(g.family).files) {
    return files->generation_config_json(ids);
  }
  if (g.family == Family::kGraniteHybrid || g.family == Family::kGraniteMoe) {
    return granite_hybrid_generation_config_json(ids);
  }
  if (g.family == Family::kNemotronH) return nemotron_h_generation_config_json(ids);
  if (g.family == Family::kFalconH1) return falcon_h1_generation_config_json(ids);
  if (g.family == Family::kLlama) {  // Llama-3.2-1B-Instruct's
    const Json j = {{"bos_token_id", ids.begin_of_text},
                    {"do_sample", true},
                    {"eos_token_id", {ids.end_of_text, ids.eom, ids.eot}},
                    {"temperature", 0.6},
                    {"top_p", 0.9},
                    {"transformers_version", "4.45.0.dev0"}};
    return j.dump(2) + "\n";
  }
  if (g.family == Family::kLfm2 || g.family == Family::kLfm2Moe) {  // LiquidAI/LFM2-350M's
    const Json j = {{"bos_token_id", ids.begin_of_text},
                    {"eos_token_id", ids.im_end},
                    {"pad_token_id", 0},
                    {"transformers_version", "4.54.0.dev0"}};
    return j.dump(2) + "\n";
  }
  if (g.family == Family::kGemma3) {  // gemma-3-1b-it's
    const Json j = {{"bos_token_id", 2}, {"cache_implementation", "hybrid"},
                    {"do_sample", true}, {"eos_token_id", {ids.endoftext, ids.im_end}},
                    {"pad_token_id", 0}, {"top_k", 64},
                    {"top_p", 0.95},     {"transformers_version", "4.50.0.dev0"}};
    return j.dump(2) + "\n";
  }
  const bool thinking_default = g.family == Family::kQwen3 || g.family == Family::kQwen3Moe;
  Json j = {{"bos_token_id", ids.endoftext},
            {"do_sample", true},
            {"eos_token_id", {ids.im_end, ids.endoftext}},
            {"pad_token_id", ids.endoftext},
            {"temperature", thinking_default ? 0.6 : 0.7},
            {"top_k", 20},
            {"top_p", thinking_default ? 0.95 : 0.8},
            {"transformers_version", "4.51.0"}};
  return j.dump(2) + "\n";
}

}  // namespace recur::modelgen
