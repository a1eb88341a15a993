// Public API of the checkpoint generator: writes a complete Hugging Face checkpoint directory
// (config.json, safetensors, tokenizer files, generation_config.json) with random but well-scaled
// weights for qwen3, qwen3_5, mamba2 or llama, optionally MLX-quantized. Deterministic from the
// seed. Not a loader: model/ reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/check.h"
#include "util/dtype.h"
#include "util/status.h"

namespace recur::modelgen {

enum class Family {
  kQwen3,
  kQwen3_5,
  kMamba2,
  kGemma3,
  kLlama,
  kQwen3Moe,
  kGraniteHybrid,
  kLfm2,
  kNemotronH,
  kFalconH1,
  kQwen3_5Moe,
  kQwen3Next,
  kGraniteMoe,  // granitemoehybrid with num_local_experts > 0 (make-model's granitemoehybrid_moe)
  kLfm2Moe,
  kGptOss,
  kSmolLm3,
};
// Weights are written in util's element types; the names are modelgen's too.
using recur::DType;
using recur::dtype_name;
using recur::parse_dtype;

// What to generate. preset: "tiny" (tests: small, generates in milliseconds; gemma3's has a
// 16-token sliding window), or the real geometry "qwen3-0.6b", "qwen3.5-0.8b", "mamba2-130m",
// "gemma-3-1b", "gemma-3-270m", "llama-3.2-1b" (benchmarks: hundreds of MB); llama also has
// "tiny-bias" (tied head, attention and MLP biases, no RoPE scaling); qwen3_moe has
// "qwen3-30b-a3b" (tens of GB: run it with a few layers); granitemoehybrid has
// "granite-4.0-h-350m", "tiny-groups" (two SSM groups) and "tiny-bias" (Mamba2 projection biases);
// granitemoehybrid_moe (model_type granitemoehybrid with experts) has "granite-4.0-h-tiny" (run it
// with a few layers); lfm2_moe "lfm2-8b-a1b" (likewise); lfm2 "lfm2-350m" and "tiny-bias" (conv
// biases, an untied head); nemotron_h has "nemotron-h-4b", "nemotron-3-nano-30b-a3b" (MoE blocks;
// run them with a few layers) and "tiny-moe" (M E M * E -: grouped routing, a shared expert);
// falcon_h1 "falcon-h1-0.5b" and "tiny-norm" (the mixer's gated norm, two SSM groups, a tied head);
// qwen3_5_moe "qwen3.5-35b-a3b" and qwen3_next "qwen3-next-80b-a3b" (tens of GB: run them with a
// few layers); gpt_oss "gpt-oss-20b" and "gpt-oss-120b" (MXFP4 experts as released; tens of GB:
// run them with a few layers); smollm3 "smollm3-3b" and "tiny-list" (an explicit no_rope_layers,
// a sliding window on the NoPE layers, biases, a tied head). A non-zero layers / hidden_size /
// vocab_size overrides the preset (heads are scaled with hidden_size). bits != 0 writes an MLX
// affine-quantized checkpoint instead (4 or 8 bits, groups of group_size = 32, 64 or 128 inputs;
// scales and biases in dtype), laid out as mlx-lm / mlx-vlm write one (mlx_layout.h,
// docs/checkpoints.md). The values before storage are those of the same seed's unquantized
// checkpoint.
struct GenSpec {
  Family family = Family::kQwen3_5;
  std::string preset = "tiny";
  DType dtype = DType::kBF16;
  std::uint64_t seed = 0;
  int shards = 1;
  int layers = 0;
  int hidden_size = 0;
  int vocab_size = 0;
  int bits = 0;  // 0: not quantized
  int group_size = 64;
  // > 0: the model ends its turns soon (end-to-end tests of clients that treat a reply cut at
  // max_tokens as an error). Hidden dimension 0 of every embedding row is set to a constant, which
  // the residual stream carries to the final norm, and the end-of-turn token's head row gets this
  // much more of it: a logit lead of about eos_bias * 5 at every position.
  double eos_bias = 0;
};

// What was written, for the one-line summary of `recur make-model`.
struct GenSummary {
  std::int64_t n_params = 0;
  std::int64_t n_bytes = 0;  // all files together
  int n_files = 0;
};

// Writes the checkpoint into out_dir (created if missing; files of the same names are replaced).
// Writes into a temporary sibling folder first and renames it, so an interrupted run never leaves
// a half checkpoint under out_dir. out_dir must not exist or be an empty directory or a previous
// checkpoint (a directory holding config.json).
Status write_checkpoint(const GenSpec& spec, const std::string& out_dir,
                        GenSummary* summary = nullptr);

// One row per family (family_records.cc), the one place outside the preset and tensor tables that
// spells a family: its --family word (also file names), the model_type of the config.json it
// writes (what recur quantize reads back) and its presets besides "tiny". A preset two families
// share (tiny-bias) names the first of them when --family is left out.
// How a family's files are made when one module of the generator holds them all (families.h);
// families without it are dispatched by the switches of presets.cc, config_files.cc and
// tokenizer_gen.cc.
struct FamilyFiles;
struct FamilyRecord {
  Family family;
  std::string_view word;
  std::string_view model_type;
  std::vector<std::string_view> presets;
  const FamilyFiles* files = nullptr;
};
std::span<const FamilyRecord> family_records();
const FamilyRecord& family_record(Family family);
std::optional<Family> parse_family(std::string_view word);
const char* family_name(Family family);
std::optional<Family> family_of_preset(std::string_view preset);

}  // namespace recur::modelgen
