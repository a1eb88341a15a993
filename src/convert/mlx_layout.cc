// MLX naming and layout rules (mlx-lm models/{qwen3,qwen3_5,mamba2}.py sanitize, utils.py
// quantize_model and save_config) applied to one tensor or one config.json at a time.
#include "convert/mlx_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>

#include "model/family.h"
#include "util/check.h"

namespace recur::convert {

Status check_quant_format(int bits, int group_size) {
  if (bits != 4 && bits != 8) {
    return Error(StatusCode::kInvalidArgument,
                 "unsupported quantization bits {}: recur writes 4 or 8 bits (MLX affine)", bits);
  }
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    return Error(StatusCode::kInvalidArgument,
                 "unsupported quantization group size {}: recur writes groups of 32, 64 or 128",
                 group_size);
  }
  return Status::ok();
}

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The MLX name of a tensor, or "" when MLX checkpoints leave it out (mtp.*, the vision tower).
std::string mlx_name(const model::MlxConversion& conv, std::string_view hf) {
  using Names = model::MlxConversion::Names;
  // The multi-token-prediction head: qwen3_5.py and qwen3_next.py sanitize it away, and mlx-lm
  // loads strictly, so a copy that kept it would be refused. recur reads it for no family.
  if (hf.starts_with("mtp.") || contains(hf, ".mtp.")) return "";
  if (conv.names == Names::kGluRenamed) {
    // lfm2_moe.py sanitize: the feed-forward's w1 / w3 / w2 are named gate_proj / up_proj /
    // down_proj (the experts' too, which plan_mlx stacks).
    constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kRenames = {
        {{".w1.weight", ".gate_proj.weight"},
         {".w3.weight", ".up_proj.weight"},
         {".w2.weight", ".down_proj.weight"}}};
    for (const auto& [from, to] : kRenames) {
      if (hf.ends_with(from))
        return std::string(hf.substr(0, hf.size() - from.size())) + std::string(to);
    }
    return std::string(hf);
  }
  if (conv.names != Names::kLanguageModel) return std::string(hf);
  // qwen3_5.py Model.sanitize: vision weights are dropped (the multi-token-prediction head too,
  // above); every other name moves under language_model.
  if (contains(hf, "mtp.") || hf.starts_with("model.visual") || hf.starts_with("vision_tower")) {
    return "";
  }
  constexpr std::string_view kHfRoot = "model.language_model.";
  if (hf.starts_with(kHfRoot)) {
    return "language_model.model." + std::string(hf.substr(kHfRoot.size()));
  }
  if (hf.starts_with("language_model.")) return std::string(hf);
  return "language_model." + std::string(hf);
}

bool is_head(std::string_view name) {
  return name == "lm_head.weight" || name == "language_model.lm_head.weight";
}

// qwen3_5.py TextModel.sanitize: the zero-centred RMSNorms that MLX runs as plain RMSNorms.
bool is_zero_centred_norm(std::string_view name) {
  constexpr std::array<std::string_view, 5> kSuffixes = {
      ".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
      ".q_norm.weight", ".k_norm.weight"};
  return std::any_of(kSuffixes.begin(), kSuffixes.end(),
                     [&](std::string_view s) { return name.ends_with(s); });
}

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Module paths compared part by part (between dots), numbers as numbers: layer 2 before layer 10,
// as mlx-lm walks the model's list of layers.
bool module_order(std::string_view a, std::string_view b) {
  while (!a.empty() && !b.empty()) {
    const std::size_t da = std::min(a.find('.'), a.size()), db = std::min(b.find('.'), b.size());
    const std::string_view pa = a.substr(0, da), pb = b.substr(0, db);
    if (all_digits(pa) && all_digits(pb) && pa.size() != pb.size()) return pa.size() < pb.size();
    if (pa != pb) return pa < pb;
    a.remove_prefix(std::min(da + 1, a.size()));
    b.remove_prefix(std::min(db + 1, b.size()));
  }
  return a.size() < b.size();
}

}  // namespace

// The rule itself is the model's (model::mlx_keeps_at_8_bits), so the writers and --quantize keep
// the same modules at 8 bits.
std::optional<QuantFormat> mlx_module_override(const model::FamilyInfo& family,
                                               std::string_view path) {
  if (!model::mlx_keeps_at_8_bits(family.name, path)) return std::nullopt;
  return QuantFormat{.bits = 8, .group_size = 64};
}

Result<MlxRules> mlx_rules_for(std::string_view model_type, bool has_experts, bool tied,
                               QuantFormat format) {
  const model::FamilyInfo* family = model::family_for_type(model_type);
  if (family == nullptr) {
    std::vector<std::string_view> types;
    for (const model::FamilyInfo& f : model::families()) {
      types.insert(types.end(), f.model_types.begin(), f.model_types.end());
    }
    return Error(StatusCode::kInvalidArgument, "model_type '{}' is not one recur converts ({})",
                 model_type, fmt::join(types, ", "));
  }
  return MlxRules{.family = family, .has_experts = has_experts, .tied = tied, .format = format};
}

MlxTensor mlx_tensor(const MlxRules& rules, std::string_view hf_name,
                     std::span<const std::int64_t> shape, DType dtype) {
  MlxTensor t{.name = mlx_name(rules.family->mlx, hf_name),
              .shape = {shape.begin(), shape.end()},
              .dtype = dtype,
              .format = rules.format};
  if (t.name.empty() || (rules.tied && is_head(t.name))) {
    t.action = MlxAction::kDrop;
    return t;
  }
  // A Linear weight, or MLX's stacked experts (switch_mlp.*.weight [experts, rows, cols]).
  const bool stacked = shape.size() == 3 && contains(t.name, ".switch_mlp.");
  if ((shape.size() == 2 || stacked) && t.name.ends_with(".weight")) {
    // utils.py quantize_model: the checkpoint's group size decides whether a module is
    // quantized at all, the model's quant_predicate then at which format; a matrix of a module
    // that is not a Linear (nemotron_h.py's router) stays as it is.
    const std::string_view path = std::string_view(t.name).substr(0, t.name.size() - 7);
    if (model::mlx_keeps_floating(rules.family->name, path)) return t;
    if (const auto f = mlx_module_override(*rules.family, path)) {
      t.format = *f;
      t.overridden = true;
    }
    if (shape.back() % rules.format.group_size == 0 && shape.back() % t.format.group_size == 0) {
      t.action = MlxAction::kQuantize;
    } else {
      t.not_divisible = true;
      t.format = rules.format;
      t.overridden = false;
    }
    return t;
  }
  // mamba2.py / qwen3_5.py / lfm2.py sanitize: moveaxis(2, 1) when the last dim is not 1. With
  // one input channel per group the bytes stay in place.
  const bool conv = contains(t.name, "conv1d.weight") || t.name.ends_with(".conv.conv.weight");
  if (shape.size() == 3 && conv && shape[2] != 1) {
    RECUR_CHECK(shape[1] == 1);
    t.shape = {shape[0], shape[2], shape[1]};
    return t;
  }
  // qwen3_5.py and qwen3_next.py fold the 1 in alike (qwen3_5_moe.py reuses qwen3_5.py's).
  if (rules.family->mlx.folds_norm_one && shape.size() == 1 && is_zero_centred_norm(t.name)) {
    t.action = MlxAction::kFoldOne;
  }
  return t;
}

void append_mlx_entries(const MlxTensor& t, std::vector<TensorEntry>& out) {
  const QuantFormat& format = t.format;
  if (t.action == MlxAction::kDrop) return;
  if (t.action != MlxAction::kQuantize) {
    out.push_back({.name = t.name, .shape = t.shape, .dtype = t.dtype});
    return;
  }
  const std::int64_t cols = t.shape.back();
  const std::string path = t.name.substr(0, t.name.size() - std::string_view(".weight").size());
  std::vector<std::int64_t> lead(t.shape.begin(), t.shape.end() - 1);  // [rows] or [experts, rows]
  std::vector<std::int64_t> group_shape = lead, code_shape = lead;
  group_shape.push_back(cols / format.group_size);
  code_shape.push_back(cols * format.bits / 32);
  out.push_back({.name = t.name, .shape = code_shape, .u32 = true});
  out.push_back({.name = path + ".scales", .shape = group_shape, .dtype = t.dtype});
  out.push_back({.name = path + ".biases", .shape = group_shape, .dtype = t.dtype});
}

std::vector<ModuleFormat> mlx_overrides(std::span<const MlxTensor> tensors) {
  std::vector<ModuleFormat> out;
  for (const MlxTensor& t : tensors) {
    if (t.action != MlxAction::kQuantize || !t.overridden) continue;
    out.push_back({.path = t.name.substr(0, t.name.size() - 7), .format = t.format});
  }
  std::sort(out.begin(), out.end(), [](const ModuleFormat& a, const ModuleFormat& b) {
    return module_order(a.path, b.path);
  });
  return out;
}

namespace {

using OrderedJson = nlohmann::ordered_json;

// Python's json module writes bare Infinity, -Infinity and NaN (mamba2's time_step_limit). They
// travel through nlohmann as these strings and are put back after dumping.
constexpr std::string_view kLiteralTag = "__recur_python_literal__:";
constexpr std::array<std::string_view, 3> kPythonLiterals = {"-Infinity", "Infinity", "NaN"};

std::string quote_python_literals(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const auto literal =
        std::find_if(kPythonLiterals.begin(), kPythonLiterals.end(),
                     [&](std::string_view lit) { return text.substr(i).starts_with(lit); });
    if (literal == kPythonLiterals.end()) {
      out += c;
      continue;
    }
    out += fmt::format("\"{}{}\"", kLiteralTag, *literal);
    i += literal->size() - 1;
  }
  return out;
}

std::string unquote_python_literals(std::string text) {
  for (std::string_view lit : kPythonLiterals) {
    const std::string quoted = fmt::format("\"{}{}\"", kLiteralTag, lit);
    for (std::size_t at; (at = text.find(quoted)) != std::string::npos;) {
      text.replace(at, quoted.size(), lit);
    }
  }
  return text;
}

bool has_quantization(const OrderedJson& j) {
  return j.contains("quantization") || j.contains("quantization_config");
}

}  // namespace

Result<std::string> add_quantization_config(std::string_view config_text, const QuantFormat& format,
                                            std::span<const ModuleFormat> overrides) {
  OrderedJson config = OrderedJson::parse(quote_python_literals(config_text), nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return Error(StatusCode::kInvalidArgument, "config.json is not a JSON object");
  }
  const auto text_config = config.find("text_config");
  if (has_quantization(config) ||
      (text_config != config.end() && text_config->is_object() && has_quantization(*text_config))) {
    return Error(StatusCode::kInvalidArgument,
                 "config.json already has a quantization entry: the checkpoint is quantized");
  }
  OrderedJson quantization = {
      {"group_size", format.group_size}, {"bits", format.bits}, {"mode", "affine"}};
  // The predicate's own dict, without "mode" (mlx-lm writes what quant_predicate returns).
  for (const ModuleFormat& m : overrides) {
    quantization[m.path] = {{"group_size", m.format.group_size}, {"bits", m.format.bits}};
  }
  config["quantization"] = quantization;
  config["quantization_config"] = quantization;
  return unquote_python_literals(config.dump(2)) + "\n";
}

}  // namespace recur::convert
