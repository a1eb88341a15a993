// Orchestrates one checkpoint: geometry from the preset and overrides, tensors, config files.
#include "modelgen/generator.h"

namespace recur::modelgen {

std::optional<Family> parse_family(std::string_view word) {
  if (word == "qwen3") return Family::kQwen3;
  if (word == "qwen3_5") return Family::kQwen3_5;
  if (word == "mamba2") return Family::kMamba2;
  return std::nullopt;
}

std::optional<DType> parse_dtype(std::string_view word) {
  if (word == "bf16") return DType::kBF16;
  if (word == "f16") return DType::kF16;
  if (word == "f32") return DType::kF32;
  return std::nullopt;
}

const char* family_name(Family family) {
  switch (family) {
    case Family::kQwen3:
      return "qwen3";
    case Family::kQwen3_5:
      return "qwen3_5";
    case Family::kMamba2:
      return "mamba2";
  }
  return "?";
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
    case DType::kF32:
      return "f32";
  }
  return "?";
}

Status write_checkpoint(const GenSpec&, const std::string&, GenSummary*) {
  return Error(StatusCode::kUnimplemented, "the checkpoint generator is being built");
}

}  // namespace recur::modelgen
