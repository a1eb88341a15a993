// The layout of an MLX affine-quantized checkpoint as mlx-lm / mlx-vlm write one
// (../shared/reference/model-families.md section 6): tensor names, conv1d shape, zero-centred
// norms with +1 folded in, which weights are quantized, safetensors metadata and the config.json
// quantization objects. The one place these rules live: the generator (GenSpec::bits) and
// quantize_checkpoint both follow them, and a loader then needs only "a <path>.scales tensor
// exists -> quantized; format mlx -> norms folded, conv1d [C, K, 1]". Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelgen/generator.h"
#include "modelgen/safetensors_writer.h"
#include "util/status.h"

namespace recur::modelgen {

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
};

struct MlxRules {
  Family family = Family::kQwen3_5;
  bool tied = true;  // tie_word_embeddings: the head is the embedding, lm_head.weight is dropped
  QuantFormat format;
};

// The fate of the Hugging Face tensor hf_name [shape] of `dtype`:
// - names: qwen3 and mamba2 keep theirs (model.*, backbone.*, lm_head.weight); qwen3_5
//   (Qwen3_5ForConditionalGeneration, as mlx-vlm / mlx-lm write it) moves model.language_model.*
//   to language_model.model.* and lm_head.weight to language_model.lm_head.weight;
// - dropped: mtp.*, model.visual.* / vision_tower.*, and lm_head.weight when tied;
// - quantized: every 2-D `.weight` (all are Linear or Embedding weights in these families) whose
//   cols divide by the group size, and stacked experts `<p>switch_mlp.<proj>.weight`
//   [experts, rows, cols] (codes, scales and biases stacked alike); the rest stays floating in
//   its own dtype;
// - conv1d.weight [C, 1, K] becomes [C, K, 1] (the same bytes in the same order);
// - qwen3_5's zero-centred norms (input_layernorm, post_attention_layernorm, the final norm,
//   self_attn.q_norm, self_attn.k_norm; not linear_attn.norm) get +1 folded in.
MlxTensor mlx_tensor(const MlxRules& rules, std::string_view hf_name,
                     std::span<const std::int64_t> shape, DType dtype);

// The safetensors entries of a planned tensor (none for kDrop): itself, or for kQuantize
// <path>.weight U32 [rows, cols * bits / 32], <path>.scales and <path>.biases
// [rows, cols / group_size] in the tensor's dtype.
void append_mlx_entries(const MlxTensor& t, const QuantFormat& format,
                        std::vector<TensorEntry>& out);

// config.json text with "quantization": {"group_size", "bits", "mode": "affine"} and the same
// object under "quantization_config" added at the top level, as mlx-lm's quantize_model does;
// every other key keeps its value and place (Python's bare Infinity / NaN literals too). An error
// when the text is not a JSON object or already has either key (here or in text_config).
Result<std::string> add_quantization_config(std::string_view config_text,
                                            const QuantFormat& format);

}  // namespace recur::modelgen
