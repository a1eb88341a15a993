// Typed access to a Hugging Face config.json: the text model's fields live at the top level or in
// `text_config`; Python's non-JSON literals (Infinity, -Infinity, NaN) and transformers-5's
// {"__float__": "Infinity"} are accepted. Families read their typed configs through this; the JSON
// library stays inside model/.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::model {

// config.json's "quantization" (MLX; also "quantization_config"): the default bits and group size
// and per-module overrides, keyed by module path (a tensor name without ".weight").
struct QuantizationConfig {
  struct Format {
    int bits = 0;  // 0: the module is not quantized (an override of `false`)
    int group_size = 0;
  };
  Format defaults;
  std::map<std::string, Format, std::less<>> overrides;
  // The format a module should have: its override, else the defaults.
  Format for_module(std::string_view path) const;
};

class ConfigJson {
 public:
  // `file` names the source in error messages.
  static Result<ConfigJson> parse(std::string_view text, const std::string& file);

  // Top-level model_type ("" when absent).
  std::string model_type() const;
  // Canonical text (sorted keys) for fingerprints: equal configs hash equal.
  std::string canonical() const { return root_.dump(); }

  // Keys are looked up in text_config first, then at the top level. A dotted key
  // ("rope_parameters.rope_theta") walks nested objects.
  bool has(std::string_view key) const;
  Result<std::int64_t> get_int(std::string_view key) const;
  Result<std::int64_t> get_int(std::string_view key, std::int64_t fallback) const;
  Result<double> get_float(std::string_view key) const;
  Result<double> get_float(std::string_view key, double fallback) const;
  Result<bool> get_bool(std::string_view key, bool fallback) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_strings(std::string_view key) const;
  // A float pair such as Mamba2's time_step_limit.
  Result<std::vector<double>> get_floats(std::string_view key) const;
  // An int or a list of ints (eos_token_id); empty when absent or null.
  Result<std::vector<std::int64_t>> get_int_list(std::string_view key) const;

  // nullopt when the config has no quantization; an error for a malformed one or a mode other
  // than "affine" (MLX's mxfp4/nvfp4 modes are not supported).
  Result<std::optional<QuantizationConfig>> quantization() const;

  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* find(std::string_view key) const;
  Result<double> as_float(const nlohmann::json& v, std::string_view key) const;

  nlohmann::json root_;
  std::string file_;
};

// eos_token_id of a generation_config.json (an int or a list); empty when absent.
Result<std::vector<std::int64_t>> parse_generation_config_eos(std::string_view text,
                                                              const std::string& file);

}  // namespace recur::model
