// Checked access to tokenizer JSON fields: each error names the JSON path of the bad field
// ("tokenizer.json: model.merges[12]: ..."). Internal to tokenizer/.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::tokenizer::detail {

using Json = nlohmann::json;

inline std::string join_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}
inline std::string index_path(std::string_view path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// Parses text, or says where the syntax error is.
Result<Json> parse_json(std::string_view text, std::string_view file);

Status field_error(std::string_view path, std::string_view what);

// Optional fields: absent or null give def; a wrong type is an error naming path.key.
Result<bool> opt_bool(const Json& obj, std::string_view key, bool def, std::string_view path);
Result<std::string> opt_string(const Json& obj, std::string_view key, std::string_view def,
                               std::string_view path);
Result<std::int64_t> opt_int(const Json& obj, std::string_view key, std::int64_t def,
                             std::string_view path);
// Required string field.
Result<std::string> req_string(const Json& obj, std::string_view key, std::string_view path);
// "type" of a component object.
Result<std::string> type_of(const Json& obj, std::string_view path);

}  // namespace recur::tokenizer::detail
