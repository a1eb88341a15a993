// The generator's families, one row each: everything outside presets.cc and families*.cc that
// names a family (the --family and --preset words, recur quantize's model_type) reads this table.
#include <algorithm>

#include "modelgen/families.h"
#include "modelgen/generator.h"

namespace recur::modelgen {

std::span<const FamilyRecord> family_records() {
  static const std::vector<FamilyRecord> kRecords = {
      {Family::kQwen3, "qwen3", "qwen3", {"qwen3-0.6b"}},
      {Family::kQwen3_5, "qwen3_5", "qwen3_5", {"qwen3.5-0.8b"}},
      {Family::kMamba2, "mamba2", "mamba2", {"mamba2-130m"}},
      {Family::kGemma3, "gemma3", "gemma3_text", {"gemma-3-1b", "gemma-3-270m"}},
      {Family::kLlama, "llama", "llama", {"llama-3.2-1b", "tiny-bias"}},
      {Family::kQwen3Moe, "qwen3_moe", "qwen3_moe", {"qwen3-30b-a3b"}},
      {Family::kGraniteHybrid,
       "granitemoehybrid",
       "granitemoehybrid",
       {"granite-4.0-h-350m", "tiny-groups", "tiny-bias"}},
      {Family::kLfm2, "lfm2", "lfm2", {"lfm2-350m", "tiny-bias"}},
      {Family::kNemotronH,
       "nemotron_h",
       "nemotron_h",
       {"nemotron-h-4b", "nemotron-3-nano-30b-a3b", "tiny-moe"}},
      {Family::kFalconH1, "falcon_h1", "falcon_h1", {"falcon-h1-0.5b", "tiny-norm"}},
      {Family::kQwen3_5Moe, "qwen3_5_moe", "qwen3_5_moe", {"qwen3.5-35b-a3b"}},
      {Family::kQwen3Next, "qwen3_next", "qwen3_next", {"qwen3-next-80b-a3b"}},
      {Family::kGraniteMoe, "granitemoehybrid_moe", "granitemoehybrid", {"granite-4.0-h-tiny"}},
      {Family::kLfm2Moe, "lfm2_moe", "lfm2_moe", {"lfm2-8b-a1b"}},
      {Family::kGptOss, "gpt_oss", "gpt_oss", {"gpt-oss-20b", "gpt-oss-120b"}, &kGptOssFiles},
      {Family::kSmolLm3, "smollm3", "smollm3", {"smollm3-3b", "tiny-list"}, &kSmolLm3Files},
  };
  return kRecords;
}

const FamilyRecord& family_record(Family family) {
  for (const FamilyRecord& r : family_records()) {
    if (r.family == family) return r;
  }
  RECUR_CHECK_MSG(false, "a Family without a row in family_records()");
  return family_records().front();
}

std::optional<Family> parse_family(std::string_view word) {
  for (const FamilyRecord& r : family_records()) {
    if (r.word == word) return r.family;
  }
  return std::nullopt;
}

const char* family_name(Family family) { return family_record(family).word.data(); }

std::optional<Family> family_of_preset(std::string_view preset) {
  for (const FamilyRecord& r : family_records()) {
    if (std::find(r.presets.begin(), r.presets.end(), preset) != r.presets.end()) return r.family;
  }
  return std::nullopt;
}

}  // namespace recur::modelgen
