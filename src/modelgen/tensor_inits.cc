// The generated checkpoint's tensors: the model's own list for the geometry's config.json
// (model::tensors_from_config, what the family's visitor reads), each with the initialisation its
// role asks for. Values are seeded by tensor name, so the list's order only lays out the files.
//
// Scales: input projections N(0, 1/sqrt(fan_in)) keep unit-variance inputs at unit variance;
// projections back into the residual stream are scaled down by sqrt(2 * layers) so the stream's
// variance stays bounded however deep the model is; tied logits are h . E^T with h of unit RMS,
// so the embedding's std 2/sqrt(d) gives logits of std ~2. Norms are N(1, 0.02), or N(0, 0.02)
// where the model multiplies by (1 + w). Gated DeltaNet: A in [0.02, 1] and dt_bias near -2 give
// per-token decays of about 0.75..0.997, so the state carries information over hundreds of tokens
// (a state bug shows instead of being forgotten at once). Mamba2 as mamba_ssm initialises it: A in
// [1, 16], dt in [0.001, 0.1] (decays exp(-dt A) of about 0.2..0.999 per token), D = 1. Biases
// N(0, 0.1): big enough that a bias applied twice or not at all moves the logits.
#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "modelgen/families.h"
#include "util/check.h"

namespace recur::modelgen {

namespace {

bool ends(std::string_view name, std::initializer_list<std::string_view> suffixes) {
  for (std::string_view s : suffixes) {
    if (name.ends_with(s)) return true;
  }
  return false;
}

bool zero_centred_norms(Family f) {
  return f == Family::kQwen3_5 || f == Family::kQwen3_5Moe || f == Family::kQwen3Next ||
         f == Family::kGemma3;
}

// The initialisation of `name` [shape] and, where it is stored in another dtype than the
// checkpoint's, that dtype.
Init init_of(const Geometry& g, std::string_view name, const std::vector<std::int64_t>& shape,
             std::optional<DType>* fixed) {
  const double cols = static_cast<double>(shape.back());
  const double depth = std::sqrt(2.0 * g.n_layers);
  const Init linear{.a = 0.0, .b = 1.0 / std::sqrt(cols)};
  const Init out_linear{.a = 0.0, .b = 1.0 / std::sqrt(cols) / depth};
  const bool gdn = name.find("linear_attn.") != std::string_view::npos;
  // Qwen3.5 keeps the Gated DeltaNet's A_log and norm in f32; Qwen3-Next in the weights' dtype.
  const bool gdn_f32 = gdn && g.family != Family::kQwen3Next;
  if (ends(name, {"embed_tokens.weight", "embeddings.weight"})) {
    return {.a = 0.0, .b = 2.0 / std::sqrt(cols)};
  }
  if (ends(name, {"lm_head.weight"})) {
    // Falcon-H1's head is 1 / lm_head_multiplier larger, so the muP scaling does not flatten the
    // logits; the Qwen3.5-MoE family's is embedding-sized.
    if (g.family == Family::kFalconH1) {
      return {.a = 0.0, .b = 2.0 / std::sqrt(cols) / g.lm_head_multiplier};
    }
    if (g.family == Family::kQwen3Next || g.family == Family::kQwen3_5Moe) {
      return {.a = 0.0, .b = 2.0 / std::sqrt(cols)};
    }
    return linear;
  }
  if (ends(name, {"norm.weight", "layernorm.weight", "norm_f.weight"})) {
    if (gdn) {
      if (gdn_f32) *fixed = DType::kF32;
      return {.a = 1.0, .b = 0.02};
    }
    if (zero_centred_norms(g.family)) return {.a = 0.0, .b = 0.02};
    return {.a = 1.0, .b = 0.02};
  }
  if (ends(name, {"A_log"})) {
    if (gdn_f32) *fixed = DType::kF32;
    return gdn ? Init{.kind = InitKind::kLogUniform, .a = 0.02, .b = 1.0}
               : Init{.kind = InitKind::kLogUniform, .a = 1.0, .b = 16.0};
  }
  if (ends(name, {"dt_bias"})) {
    return gdn ? Init{.a = -2.0, .b = 0.5} : Init{.kind = InitKind::kDtBias, .a = 0.001, .b = 0.1};
  }
  if (ends(name, {".D"})) return {.a = 1.0, .b = 0.0};
  if (ends(name, {"conv1d.weight", "conv.conv.weight"})) return linear;  // fan-in: the kernel
  if (ends(name, {"expert_bias", "e_score_correction_bias"})) {
    *fixed = DType::kF32;  // a buffer, not a parameter: f32 in the released files
    return {.a = 0.0, .b = 0.05};
  }
  if (ends(name, {".bias", "_proj_bias"})) return {.a = 0.0, .b = 0.1};
  if (ends(name, {"self_attn.sinks"})) return {.a = 0.0, .b = 1.0};  // logits, as the scores
  if (ends(name, {"_blocks"})) return {.kind = InitKind::kUniformInt, .a = 0.0, .b = 255.0};
  if (ends(name, {"_scales"})) {
    // MXFP4: uniform codes have an RMS of 2.93 (√8.5625), so 2^(e - 127) ≈ the linear init's std
    // / 2.93, the residual projection's (down_proj) also over the depth; one exponent of jitter.
    const double in = static_cast<double>(shape.back()) * 32.0;
    const double out_scale = name.find("down_proj") != std::string_view::npos ? depth : 1.0;
    const double e = 127.0 + std::round(std::log2(1.0 / std::sqrt(in) / out_scale / 2.93));
    return {.kind = InitKind::kUniformInt, .a = e - 1.0, .b = e};
  }
  if (ends(name, {"o_proj.weight", "down_proj.weight", "out_proj.weight", "w2.weight",
                  "output_linear.weight"})) {
    return out_linear;
  }
  RECUR_CHECK_MSG(name.ends_with(".weight"), "a generated tensor without an initialisation");
  return linear;
}

}  // namespace

Result<std::vector<GenTensor>> tensor_table(const Geometry& g, DType dtype) {
  auto listed = model::tensors_from_config(config_json(g, dtype, SpecialIds{}));
  if (!listed.is_ok()) {
    return Error(StatusCode::kInvalidArgument, "preset {} with these overrides: {}", g.preset,
                 listed.status().message());
  }
  std::vector<GenTensor> out;
  std::string embedding;
  for (const model::TensorEntry& t : *listed) {
    std::optional<DType> fixed;
    const Init init = init_of(g, t.name, t.shape, &fixed);
    out.push_back(
        {.entry = {.name = t.name, .shape = t.shape, .dtype = fixed.value_or(dtype), .u8 = t.u8},
         .init = init,
         .key = t.name});
    if (t.name.ends_with("embed_tokens.weight")) embedding = t.name;
  }
  // Qwen3-0.6B is tied yet its file holds lm_head.weight too, with the embedding's values.
  if (g.family == Family::kQwen3) {
    auto head = std::find_if(out.begin(), out.end(),
                             [](const GenTensor& t) { return t.entry.name == "lm_head.weight"; });
    if (head == out.end()) {
      out.push_back(
          {.entry = {.name = "lm_head.weight", .shape = {g.vocab_size, g.d_model}, .dtype = dtype},
           .key = {}});
      head = out.end() - 1;
    }
    head->init = {.a = 0.0, .b = 2.0 / std::sqrt(static_cast<double>(g.d_model))};
    head->key = embedding;
  }
  return out;
}

}  // namespace recur::modelgen
