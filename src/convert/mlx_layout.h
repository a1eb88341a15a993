// The layout of an MLX affine-quantized checkpoint as mlx-lm / mlx-vlm write one
// (../shared/reference/model-families.md section 6): tensor names, conv1d shape, zero-centred
// norms with +1 folded in, which weights are quantized, safetensors metadata and the config.json
// quantization objects. The one place these rules live: the generator (GenSpec::bits) and
// quantize_checkpoint both follow them, and a loader then needs only "a <path>.scales tensor
// exists -> quantized; format mlx -> norms folded, conv1d [C, K, 1]". Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/safetensors_writer.h"
#include "model/family.h"
#include "util/dtype.h"
#include "util/status.h"

namespace recur::convert {

// MLX affine quantization parameters (kernels/quant.h): w ~ scale * q + bias per group of
// group_size inputs, q of `bits` bits.
struct QuantFormat {
  int bits = 4;
  int group_size = 64;
};

// Ok when recur writes and computes with this format (bits 4 or 8; groups of 32, 64 or 128);
// otherwise an error naming the allowed values.
Status check_quant_format(int bits, int group_size);

// The safetensors __metadata__ format of every shard of an MLX checkpoint.
inline constexpr std::string_view kMlxFormat = "mlx";
// mlx-lm's shard size limit (utils.py MAX_FILE_SIZE_GB).
inline constexpr std::int64_t kMlxMaxShardBytes = std::int64_t{5} << 30;

// What becomes of one tensor of a Hugging Face checkpoint.
enum class MlxAction {
  kDrop,      // absent from MLX checkpoints: mtp.*, the vision tower, a tied lm_head
  kCopy,      // same values and dtype (conv1d reshaped to [C, K, 1])
  kFoldOne,   // a zero-centred norm of qwen3_5, written as 1 + w (mlx-lm's sanitize)
  kQuantize,  // a Linear or Embedding weight: <path>.weight codes, .scales, .biases
};

struct MlxTensor {
  MlxAction action = MlxAction::kCopy;
  std::string name;                 // the MLX name ("<path>.weight" when quantized)
  std::vector<std::int64_t> shape;  // as written; the logical [rows, cols] when quantized
  DType dtype = DType::kBF16;       // of the values, or of the scales and biases
  // A Linear or Embedding weight left floating because its cols do not divide by the group size
  // (mlx-lm's quantize predicate skips such modules).
  bool not_divisible = false;
  // kQuantize: the format of this weight, the checkpoint's own or the family's override.
  QuantFormat format;
  // The format is a per-module override that config.json's "quantization" lists under the
  // module's path (the MoE routers mlx-lm keeps at 8 bits).
  bool overridden = false;
};

// A family's conversion rules (its model::FamilyInfo row) for one checkpoint.
struct MlxRules {
  const model::FamilyInfo* family = nullptr;
  bool has_experts = false;  // Granite 4.0-H's shared MLP is split only without experts
  bool tied = true;  // tie_word_embeddings: the head is the embedding, lm_head.weight is dropped
  QuantFormat format;
};

// mlx-lm's quant_predicate of the family for the module at `path` (an MLX name without
// ".weight"): the format it quantizes that module at instead of the checkpoint's, or none.
// qwen3_moe.py: "mlp.gate"; qwen3_next.py and qwen3_5.py (qwen3_5_moe; only with experts):
// "mlp.gate" and "shared_expert_gate"; granitemoehybrid.py (use_moe): "router.layer";
// lfm2_moe.py: "feed_forward.gate"; each at 8 bits in groups of 64, whatever the other bits.
std::optional<QuantFormat> mlx_module_override(const model::FamilyInfo& family,
                                               std::string_view path);
// The rules of the family accepting `model_type` (an error naming it when no family does).
Result<MlxRules> mlx_rules_for(std::string_view model_type, bool has_experts, bool tied,
                               QuantFormat format);

// The fate of the Hugging Face tensor hf_name [shape] of `dtype`:
// - names: qwen3 and mamba2 keep theirs (model.*, backbone.*, lm_head.weight); qwen3_5
//   (Qwen3_5ForConditionalGeneration, as mlx-vlm / mlx-lm write it) moves model.language_model.*
//   to language_model.model.* and lm_head.weight to language_model.lm_head.weight; lfm2_moe's
//   `<p>.w1.weight` / `.w3.weight` / `.w2.weight` become `.gate_proj` / `.up_proj` / `.down_proj`
//   (lfm2_moe.py sanitize; stacking experts is mlx_plan.h's);
// - dropped: mtp.*, model.visual.* / vision_tower.*, and lm_head.weight when tied;
// - quantized: every 2-D `.weight` (all are Linear or Embedding weights in these families) whose
//   cols divide by the group size, and stacked experts `<p>switch_mlp.<proj>.weight`
//   [experts, rows, cols] (codes, scales and biases stacked alike), at the rules' format or the
//   family's override (mlx_module_override; left floating when its group does not divide the
//   cols, where mlx-lm's quantizer would fail); the rest stays floating in its own dtype;
// - conv1d.weight [C, 1, K] becomes [C, K, 1] (the same bytes in the same order);
// - qwen3_5's zero-centred norms (input_layernorm, post_attention_layernorm, the final norm,
//   self_attn.q_norm, self_attn.k_norm; not linear_attn.norm) get +1 folded in.
MlxTensor mlx_tensor(const MlxRules& rules, std::string_view hf_name,
                     std::span<const std::int64_t> shape, DType dtype);

// The safetensors entries of a planned tensor (none for kDrop): itself, or for kQuantize
// <path>.weight U32 [rows, cols * bits / 32], <path>.scales and <path>.biases
// [rows, cols / group_size] in the tensor's dtype (bits and group_size: t.format).
void append_mlx_entries(const MlxTensor& t, std::vector<TensorEntry>& out);

// A module quantized at another format than the checkpoint's, as config.json lists it.
struct ModuleFormat {
  std::string path;  // the MLX name without ".weight"
  QuantFormat format;
};

// The overridden tensors' modules in the order mlx-lm's quantize_model meets them (the model's
// module tree: layer by layer, then by name).
std::vector<ModuleFormat> mlx_overrides(std::span<const MlxTensor> tensors);

// config.json text with "quantization": {"group_size", "bits", "mode": "affine"} followed by one
// "<path>": {"group_size", "bits"} per override, and the same object under
// "quantization_config", added at the top level as mlx-lm's quantize_model does; every other key
// keeps its value and place (Python's bare Infinity / NaN literals too). An error when the text is
// not a JSON object or already has either key (here or in text_config).
Result<std::string> add_quantization_config(std::string_view config_text, const QuantFormat& format,
                                            std::span<const ModuleFormat> overrides = {});

}  // namespace recur::convert
