// Lenient-literal JSON for config files: Python writes Infinity/NaN, which strict JSON rejects, so
// those bare words are rewritten to tagged strings before parsing and decoded on read.
#include "model/config_json.h"

#include <cmath>
#include <limits>

namespace recur::model {

namespace {

constexpr std::string_view kFloatTag = "__recur_float__:";

// Rewrites bare Infinity, -Infinity and NaN outside strings into tagged strings.
std::string quote_nonfinite_literals(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 32);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
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
    bool replaced = false;
    for (std::string_view word : {"-Infinity", "Infinity", "NaN"}) {
      if (text.substr(i, word.size()) == word) {
        out += '"';
        out += kFloatTag;
        out += word;
        out += '"';
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

std::optional<double> decode_nonfinite(std::string_view s) {
  if (s.starts_with(kFloatTag)) s.remove_prefix(kFloatTag.size());
  if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

}  // namespace

Result<ConfigJson> ConfigJson::parse(std::string_view text, const std::string& file) {
  ConfigJson c;
  c.file_ = file;
  // Copies and dump() (fingerprints, messages) recurse once per nesting level: a config.json of
  // "[[[[..." would overflow the stack. Real configs nest 4 deep.
  constexpr int kMaxDepth = 64;
  bool too_deep = false;
  auto depth_check = [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    too_deep = too_deep || depth > kMaxDepth;
    return true;
  };
  c.root_ = nlohmann::json::parse(quote_nonfinite_literals(text), depth_check,
                                  /*allow_exceptions=*/false);
  if (c.root_.is_discarded()) {
    return Error(StatusCode::kInvalidArgument, "{}: not valid JSON", file);
  }
  if (too_deep) {
    return Error(StatusCode::kInvalidArgument, "{}: JSON nests deeper than {} levels", file,
                 kMaxDepth);
  }
  if (!c.root_.is_object()) {
    return Error(StatusCode::kInvalidArgument, "{}: top level is not a JSON object", file);
  }
  if (c.root_.contains("text_config") && !c.root_["text_config"].is_object() &&
      !c.root_["text_config"].is_null()) {
    return Error(StatusCode::kInvalidArgument, "{}: text_config is not an object", file);
  }
  return c;
}

std::string ConfigJson::model_type() const {
  if (root_.contains("model_type") && root_["model_type"].is_string()) {
    return root_["model_type"].get<std::string>();
  }
  return {};
}

const nlohmann::json* ConfigJson::find(std::string_view key) const {
  auto walk = [&](const nlohmann::json& base) -> const nlohmann::json* {
    const nlohmann::json* cur = &base;
    std::string_view rest = key;
    while (true) {
      auto dot = rest.find('.');
      std::string part(rest.substr(0, dot));
      if (!cur->is_object() || !cur->contains(part)) return nullptr;
      cur = &(*cur)[part];
      if (dot == std::string_view::npos) return cur;
      rest.remove_prefix(dot + 1);
    }
  };
  if (root_.contains("text_config") && root_["text_config"].is_object()) {
    if (const auto* v = walk(root_["text_config"]); v != nullptr && !v->is_null()) return v;
  }
  const auto* v = walk(root_);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

bool ConfigJson::has(std::string_view key) const { return find(key) != nullptr; }

Result<std::int64_t> ConfigJson::get_int(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr)
    return Error(StatusCode::kInvalidArgument, "{}: missing field '{}'", file_, key);
  if (v->is_number_integer()) return v->get<std::int64_t>();
  // Some writers emit 4.0 for an integer field.
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::floor(d) == d && std::abs(d) < 1e15) return static_cast<std::int64_t>(d);
  }
  return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be an integer, got {}", file_,
               key, v->dump());
}

Result<std::int64_t> ConfigJson::get_int(std::string_view key, std::int64_t fallback) const {
  if (!has(key)) return fallback;
  return get_int(key);
}

Result<double> ConfigJson::as_float(const nlohmann::json& v, std::string_view key) const {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    if (auto d = decode_nonfinite(v.get<std::string>())) return *d;
  }
  if (v.is_object() && v.contains("__float__") && v["__float__"].is_string()) {
    if (auto d = decode_nonfinite(v["__float__"].get<std::string>())) return *d;
  }
  return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be a number, got {}", file_, key,
               v.dump());
}

Result<double> ConfigJson::get_float(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr)
    return Error(StatusCode::kInvalidArgument, "{}: missing field '{}'", file_, key);
  return as_float(*v, key);
}

Result<double> ConfigJson::get_float(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  return get_float(key);
}

Result<bool> ConfigJson::get_bool(std::string_view key, bool fallback) const {
  const auto* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be true or false, got {}",
                 file_, key, v->dump());
  }
  return v->get<bool>();
}

Result<std::string> ConfigJson::get_string(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !v->is_string()) {
    return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be a string", file_, key);
  }
  return v->get<std::string>();
}

Result<std::vector<std::string>> ConfigJson::get_strings(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !v->is_array()) {
    return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be a list of strings", file_,
                 key);
  }
  std::vector<std::string> out;
  for (const auto& s : *v) {
    if (!s.is_string()) {
      return Error(StatusCode::kInvalidArgument, "{}: field '{}' holds a non-string {}", file_, key,
                   s.dump());
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

Result<std::vector<double>> ConfigJson::get_floats(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !v->is_array()) {
    return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be a list of numbers", file_,
                 key);
  }
  std::vector<double> out;
  for (const auto& x : *v) {
    RECUR_ASSIGN_OR_RETURN(double d, as_float(x, key));
    out.push_back(d);
  }
  return out;
}

namespace {
Result<std::vector<std::int64_t>> int_list(const nlohmann::json* v, std::string_view key,
                                           const std::string& file) {
  std::vector<std::int64_t> out;
  if (v == nullptr || v->is_null()) return out;
  if (v->is_number_integer()) {
    out.push_back(v->get<std::int64_t>());
    return out;
  }
  if (v->is_array()) {
    for (const auto& x : *v) {
      if (!x.is_number_integer()) {
        return Error(StatusCode::kInvalidArgument, "{}: field '{}' holds a non-integer {}", file,
                     key, x.dump());
      }
      out.push_back(x.get<std::int64_t>());
    }
    return out;
  }
  return Error(StatusCode::kInvalidArgument, "{}: field '{}' must be an integer or a list, got {}",
               file, key, v->dump());
}
}  // namespace

Result<std::vector<std::int64_t>> ConfigJson::get_int_list(std::string_view key) const {
  return int_list(find(key), key, file_);
}

Result<std::vector<std::int64_t>> parse_generation_config_eos(std::string_view text,
                                                              const std::string& file) {
  RECUR_ASSIGN_OR_RETURN(ConfigJson c, ConfigJson::parse(text, file));
  return c.get_int_list("eos_token_id");
}

QuantizationConfig::Format QuantizationConfig::for_module(std::string_view path) const {
  auto it = overrides.find(path);
  return it != overrides.end() ? it->second : defaults;
}

Result<std::optional<QuantizationConfig>> ConfigJson::quantization() const {
  const nlohmann::json* q = nullptr;
  for (const char* key : {"quantization", "quantization_config"}) {
    for (const nlohmann::json* base :
         {&root_, root_.contains("text_config") ? &root_["text_config"] : nullptr}) {
      if (q == nullptr && base != nullptr && base->is_object() && base->contains(key) &&
          !(*base)[key].is_null()) {
        q = &(*base)[key];
      }
    }
  }
  if (q == nullptr) return std::optional<QuantizationConfig>();
  if (!q->is_object()) {
    return Error(StatusCode::kInvalidArgument, "{}: 'quantization' must be an object", file_);
  }
  // transformers' quantizers name theirs; of them recur reads MXFP4 (gpt-oss), whose tensors say
  // where they are (*_blocks / *_scales beside the floating ones), not an MLX format.
  if (q->contains("quant_method")) {
    const nlohmann::json& method = (*q)["quant_method"];
    if (method == "mxfp4") return std::optional<QuantizationConfig>();
    return Error(StatusCode::kUnimplemented,
                 "{}: quantization_config quant_method {} is not supported; supported: mxfp4 "
                 "(gpt-oss) and MLX's affine quantization",
                 file_, method.dump());
  }
  auto read_format = [&](const nlohmann::json& v,
                         const std::string& where) -> Result<QuantizationConfig::Format> {
    if (v.is_boolean() && !v.get<bool>()) return QuantizationConfig::Format{};
    if (!v.is_object() || !v.contains("bits") || !v["bits"].is_number_integer() ||
        !v.contains("group_size") || !v["group_size"].is_number_integer()) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: quantization{} needs integer 'bits' and 'group_size'", file_, where);
    }
    if (v.contains("mode") && v["mode"] != "affine") {
      return Error(StatusCode::kUnimplemented,
                   "{}: quantization{} mode {} is not supported; supported: affine", file_, where,
                   v["mode"].dump());
    }
    return QuantizationConfig::Format{.bits = v["bits"].get<int>(),
                                      .group_size = v["group_size"].get<int>()};
  };
  QuantizationConfig out;
  RECUR_ASSIGN_OR_RETURN(out.defaults, read_format(*q, ""));
  for (const auto& [key, value] : q->items()) {
    if (!value.is_object() && !value.is_boolean()) continue;  // bits, group_size, mode
    RECUR_ASSIGN_OR_RETURN(QuantizationConfig::Format f, read_format(value, " of '" + key + "'"));
    out.overrides.emplace(key, f);
  }
  return std::optional<QuantizationConfig>(std::move(out));
}

}  // namespace recur::model
