// Typed reads of request-body fields, shared by the three APIs' parsers: each wrong type or range
// is a 400 naming the field. Templates over nlohmann's json and ordered_json (the Anthropic and
// Responses parsers keep key order, so tool arguments a client echoes back re-serialize to the
// bytes the model generated). Not for anything past the parsers: JSON stops in server/.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "util/json_depth.h"

namespace recur::server {

#define RECUR_TRY_FIELD(expr)             \
  do {                                    \
    if (auto e_ = (expr); e_) return *e_; \
  } while (0)

template <typename J>
const char* json_kind(const J& v) {
  switch (v.type()) {
    case J::value_t::null:
      return "null";
    case J::value_t::boolean:
      return "a boolean";
    case J::value_t::string:
      return "a string";
    case J::value_t::array:
      return "an array";
    case J::value_t::object:
      return "an object";
    case J::value_t::discarded:
      return "invalid";
    default:
      return "a number";
  }
}

template <typename J>
ApiError wrong_type(const std::string& param, const char* expected, const J& got) {
  return invalid_request(param,
                         fmt::format("'{}' must be {}, got {}", param, expected, json_kind(got)));
}

// Field readers: absent or null leaves `out` alone; a wrong type is an error naming the field
// (`where` + key).
template <typename J>
std::optional<ApiError> read_string(const J& obj, const char* key, std::string& out,
                                    const std::string& where = "") {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return wrong_type(where + key, "a string", *it);
  out = it->template get<std::string>();
  return std::nullopt;
}

template <typename J>
std::optional<ApiError> read_bool(const J& obj, const char* key, bool& out,
                                  const std::string& where = "") {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(where + key, "a boolean", *it);
  out = it->template get<bool>();
  return std::nullopt;
}

template <typename J, typename F>
std::optional<ApiError> read_number(const J& obj, const char* key, F& out, double lo, double hi) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(key, "a number", *it);
  double v = it->template get<double>();
  if (!(v >= lo && v <= hi)) {
    return invalid_request(key,
                           fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v));
  }
  out = static_cast<F>(v);
  return std::nullopt;
}

// `limit_code` is the error code of a value out of range ("" for none).
template <typename J>
std::optional<ApiError> read_int(const J& obj, const char* key, std::optional<std::int64_t>& out,
                                 std::int64_t lo, std::int64_t hi, const char* limit_code = "") {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() &&
      !(it->is_number_float() &&
        it->template get<double>() == std::floor(it->template get<double>()))) {
    return wrong_type(key, "an integer", *it);
  }
  double v = it->template get<double>();
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    return invalid_request(
        key, fmt::format("'{}' must be between {} and {}, got {}", key, lo, hi, v), limit_code);
  }
  out = static_cast<std::int64_t>(v);
  return std::nullopt;
}

// OpenAI's reasoning effort (Chat Completions' `reasoning_effort`, Responses' `reasoning.effort`)
// as the chat templates' variables: `enable_thinking`, the thinking switch of Qwen3-style templates
// (none and minimal turn it off, low, medium and high on; recur does not budget reasoning by
// effort), and `reasoning_effort`, gpt-oss's level (low, medium or high; none and minimal are low:
// gpt-oss cannot reason less). Absent or null sets neither.
template <typename J>
std::optional<ApiError> read_reasoning_effort(const J& obj, const char* key, J& kwargs,
                                              const std::string& where = "") {
  std::string effort;
  if (auto e = read_string(obj, key, effort, where)) return e;
  if (effort == "none" || effort == "minimal") {
    kwargs["enable_thinking"] = false;
    kwargs["reasoning_effort"] = "low";
  } else if (effort == "low" || effort == "medium" || effort == "high") {
    kwargs["enable_thinking"] = true;
    kwargs["reasoning_effort"] = effort;
  } else if (!effort.empty()) {
    return invalid_request(where + key, fmt::format("'{}{}' must be none, minimal, low, medium or "
                                                    "high, got '{}'",
                                                    where, key, effort));
  }
  return std::nullopt;
}

// The body as a JSON object, its nesting checked before parsing: dump(), which tools and
// arguments go through, recurses once per level, so "[[[[..." a few hundred kilobytes deep would
// overflow the stack.
template <typename J>
Parsed<J> parse_json_body(std::string_view body, int max_depth) {
  if (json_nesting_depth(body) > max_depth) {
    return invalid_request(
        "", fmt::format("request body nests arrays and objects deeper than {} levels", max_depth),
        "limit_exceeded");
  }
  J j = J::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_request("", "request body is not valid JSON");
  if (!j.is_object()) return invalid_request("", "request body must be a JSON object");
  return j;
}

// JSON text of a value, invalid UTF-8 replaced rather than thrown on.
template <typename J>
std::string dump_json(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

}  // namespace recur::server
