// Public API of `recur quantize`: converts a Hugging Face checkpoint directory (bf16, f16 or f32;
// qwen3, qwen3_5 or mamba2) into an MLX affine-quantized checkpoint laid out as mlx-lm / mlx-vlm
// write one (mlx_layout.h, docs/checkpoints.md), streaming tensor by tensor. Not a loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace recur::convert {

struct QuantizeSummary {
  int n_quantized = 0;  // Linear / Embedding weights written as codes + scales + biases
  int n_kept = 0;       // tensors written floating (norms, conv1d, A_log, ..., not_divisible)
  int n_dropped = 0;    // tensors MLX checkpoints leave out: mtp.*, vision tower, tied lm_head
  // Linear / Embedding weights left floating because their cols do not divide by the group size
  // (as mlx-lm does); also counted in n_kept.
  std::vector<std::string> not_divisible;
  std::int64_t in_bytes = 0;   // tensor data of the input
  std::int64_t out_bytes = 0;  // every file written
  int n_files = 0;
  double seconds = 0.0;
};

// Reads the checkpoint in in_dir (model::Checkpoint) and writes out_dir: quantized weights (bits
// 4 or 8, groups of group_size = 32, 64 or 128 inputs, scales and biases in each weight's own
// dtype), config.json with "quantization" and "quantization_config" added, and a copy of every
// other file (tokenizer.json, tokenizer_config.json, chat_template.jinja,
// generation_config.json, ...; not other weight formats, hidden files or subfolders).
// out_dir is written the way write_checkpoint writes (temporary sibling, then rename) and must
// not exist, or be empty, or hold a previous checkpoint; it must not be in_dir.
// Errors (kInvalidArgument unless noted): unsupported bits or group size; in_dir not a checkpoint
// (kNotFound); a model_type other than qwen3 / qwen3_5 / mamba2; an input that is already
// quantized (a quantization entry in config.json or a .scales tensor) or already in MLX layout
// (conv1d [C, K, 1]); a tensor that is not bf16 / f16 / f32; I/O failures (kIo).
Status quantize_checkpoint(const std::string& in_dir, const std::string& out_dir, int bits,
                           int group_size, QuantizeSummary* summary = nullptr);

}  // namespace recur::convert
