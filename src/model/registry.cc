// The one place that knows every family the loader reads: model_type → family. A family is its
// row here, its file (config.json into a StackSpec) and its generator row; docs/model.md "Adding a
// family" lists the rest.
#include <fmt/format.h>

#include <algorithm>

#include "model/family.h"

namespace recur::model {

// Defined in each family file: config.json into a StackSpec (stack.h).
Result<std::unique_ptr<FamilyModel>> create_qwen3(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_qwen3_5(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_mamba2(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_gemma3(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_llama(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_qwen3_moe(const ConfigJson& c,
                                                      const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_granite_hybrid(const ConfigJson& c,
                                                           const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_lfm2(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_nemotron_h(const ConfigJson& c,
                                                       const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_falcon_h1(const ConfigJson& c,
                                                      const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_qwen3_next(const ConfigJson& c,
                                                       const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_qwen3_5_moe(const ConfigJson& c,
                                                        const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_gpt_oss(const ConfigJson& c, const std::string& prefix);
Result<std::unique_ptr<FamilyModel>> create_smollm3(const ConfigJson& c, const std::string& prefix);

std::span<const FamilyInfo> families() {
  static const std::vector<FamilyInfo> kFamilies = {
      {.name = "qwen3",
       .model_types = {"qwen3"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .create = create_qwen3},
      // The wrapper (Qwen3_5ForConditionalGeneration) uses model.language_model.*; the text-only
      // Qwen3_5ForCausalLM uses model.*; mlx-vlm's conversions language_model.model.*.
      {.name = "qwen3_5",
       .model_types = {"qwen3_5", "qwen3_5_text"},
       .tensor_prefixes = {"model.language_model.", "model.", "language_model.model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx = {.names = MlxConversion::Names::kLanguageModel,
               .folds_norm_one = true,
               .unconverted_types = {"qwen3_5_text"}},
       .create = create_qwen3_5},
      {.name = "mamba2",
       .model_types = {"mamba2"},
       .tensor_prefixes = {"backbone."},
       .probe_tensor = "embeddings.weight",
       .create = create_mamba2},
      // Gemma3ForCausalLM: model.*; Gemma3ForConditionalGeneration (model_type gemma3, the text
      // config nested): language_model.model.* (transformers 4.50-4.51, mlx-vlm) or
      // model.language_model.* (later transformers).
      {.name = "gemma3",
       .model_types = {"gemma3_text", "gemma3"},
       .tensor_prefixes = {"model.", "language_model.model.", "model.language_model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx = {.unconverted_types = {"gemma3"}},
       .create = create_gemma3},
      {.name = "llama",
       .model_types = {"llama"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .create = create_llama},
      {.name = "qwen3_moe",
       .model_types = {"qwen3_moe"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"mlp.gate"},
       .mlx = {.stacks_experts = true},
       .create = create_qwen3_moe},
      {.name = "granitemoehybrid",
       .model_types = {"granitemoehybrid"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"router.layer"},
       .mlx = {.splits_shared_mlp = true},
       .create = create_granite_hybrid},
      {.name = "lfm2",
       .model_types = {"lfm2"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .create = create_lfm2},
      // LFM2-MoE: lfm2.cc reads the MoE keys when model_type is lfm2_moe.
      {.name = "lfm2_moe",
       .model_types = {"lfm2_moe"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"feed_forward.gate"},
       .mlx = {.names = MlxConversion::Names::kGluRenamed, .stacks_experts = true},
       .create = create_lfm2},
      // Released checkpoints name the model backbone.*; transformers 5 may save model.*. mlx-lm's
      // nemotron_h.py stacks the MoE blocks' experts into switch_mlp.fc1 / fc2 and leaves the
      // router (MoEGate, not a Linear) unquantized; it has no quant_predicate.
      {.name = "nemotron_h",
       .model_types = {"nemotron_h"},
       .tensor_prefixes = {"backbone.", "model."},
       .probe_tensor = "embeddings.weight",
       .mlx_float_modules = {"mixer.gate"},
       .mlx = {.stacks_experts = true, .switch_fc = true},
       .create = create_nemotron_h},
      // Same nesting as qwen3_5: Qwen3_5MoeForConditionalGeneration's model.language_model.*,
      // Qwen3_5MoeForCausalLM's model.*, mlx-vlm's language_model.model.*.
      {.name = "qwen3_5_moe",
       .model_types = {"qwen3_5_moe", "qwen3_5_moe_text"},
       .tensor_prefixes = {"model.language_model.", "model.", "language_model.model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"mlp.gate", "shared_expert_gate"},
       .mlx = {.names = MlxConversion::Names::kLanguageModel,
               .folds_norm_one = true,
               .stacks_experts = true,
               .unconverted_types = {"qwen3_5_moe_text"}},
       .create = create_qwen3_5_moe},
      {.name = "qwen3_next",
       .model_types = {"qwen3_next"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"mlp.gate", "shared_expert_gate"},
       .mlx = {.folds_norm_one = true, .stacks_experts = true},
       .create = create_qwen3_next},
      {.name = "falcon_h1",
       .model_types = {"falcon_h1"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .create = create_falcon_h1},
      // gpt-oss's MXFP4 experts have no MLX affine form that mlx-lm's gpt_oss.py would read
      // back from recur quantize; its own mxfp4 mode is not a format recur reads.
      {.name = "gpt_oss",
       .model_types = {"gpt_oss"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .mlx_8bit_modules = {"mlp.router"},
       .mlx = {.unconverted_types = {"gpt_oss"}},
       .create = create_gpt_oss},
      {.name = "smollm3",
       .model_types = {"smollm3"},
       .tensor_prefixes = {"model."},
       .probe_tensor = "embed_tokens.weight",
       .create = create_smollm3},
  };
  return kFamilies;
}

const FamilyInfo* family_for_type(std::string_view type) {
  for (const FamilyInfo& f : families()) {
    for (std::string_view t : f.model_types) {
      if (t == type) return &f;
    }
  }
  return nullptr;
}

bool mlx_keeps_at_8_bits(std::string_view family, std::string_view module) {
  for (const FamilyInfo& f : families()) {
    if (f.name != family) continue;
    for (std::string_view m : f.mlx_8bit_modules) {
      if (module.ends_with(m)) return true;
    }
  }
  return false;
}

bool mlx_keeps_floating(std::string_view family, std::string_view module) {
  for (const FamilyInfo& f : families()) {
    if (f.name != family) continue;
    for (std::string_view m : f.mlx_float_modules) {
      if (module.ends_with(m)) return true;
    }
  }
  return false;
}

Result<const FamilyInfo*> find_family(const ConfigJson& config) {
  const std::string type = config.model_type();
  std::vector<std::string> supported;
  for (const FamilyInfo& f : families()) {
    for (std::string_view t : f.model_types) {
      if (t == type) return &f;
      supported.emplace_back(t);
    }
  }
  return Error(StatusCode::kUnimplemented, "{}: unsupported model_type '{}'; supported: {}",
               config.file(), type, fmt::join(supported, ", "));
}

Status check_default_rope(const ConfigJson& c) {
  for (const char* key :
       {"rope_scaling.rope_type", "rope_scaling.type", "rope_parameters.rope_type"}) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(std::string type, c.get_string(key));
    if (type != "default") {
      return Error(StatusCode::kUnimplemented, "{}: {} '{}' is not supported (only 'default')",
                   c.file(), key, type);
    }
  }
  return Status::ok();
}

Status check_size_bounds(const ConfigJson& c, std::int64_t n_layers,
                         std::initializer_list<std::int64_t> widths,
                         std::initializer_list<std::int64_t> dims) {
  constexpr std::int64_t kMaxLayers = 1024, kMaxWidth = 1 << 20, kMaxDim = 4096;
  bool ok = n_layers <= kMaxLayers;
  for (std::int64_t w : widths) ok = ok && w <= kMaxWidth;
  for (std::int64_t d : dims) ok = ok && d <= kMaxDim;
  if (ok) return Status::ok();
  return Error(StatusCode::kInvalidArgument,
               "{}: a size field is beyond any supported model (layers <= {}, hidden, intermediate "
               "and vocab sizes <= {}, heads and head dims <= {})",
               c.file(), kMaxLayers, kMaxWidth, kMaxDim);
}

Result<kernels::DType> kv_dtype_from_config(const ConfigJson& c) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(auto v, c.get_string(key));
    if (v == "float32") return kernels::DType::kF32;
    return kernels::DType::kBF16;
  }
  return kernels::DType::kBF16;
}

}  // namespace recur::model
