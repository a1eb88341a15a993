// Located JSON errors for tokenizer files.
#include "tokenizer/json_util.h"

namespace recur::tokenizer::detail {
namespace {

// Only the SAX interface reports where a syntax error is without throwing.
struct ErrorFinder : nlohmann::json_sax<Json> {
  std::size_t position = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception&) override {
    position = pos;
    return false;
  }
};

}  // namespace

Result<Json> parse_json(std::string_view text, std::string_view file) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  ErrorFinder finder;
  Json::sax_parse(text.begin(), text.end(), &finder, nlohmann::detail::input_format_t::json,
                  /*strict=*/true);
  return Error(StatusCode::kInvalidArgument, "{}: invalid JSON near byte {}", file,
               finder.position);
}

Status field_error(std::string_view path, std::string_view what) {
  return Error(StatusCode::kInvalidArgument, "{}: {}", path, what);
}

Result<bool> opt_bool(const Json& obj, std::string_view key, bool def, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return def;
  if (!it->is_boolean()) return field_error(join_path(path, key), "expected true or false");
  return it->get<bool>();
}

Result<std::string> opt_string(const Json& obj, std::string_view key, std::string_view def,
                               std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string(def);
  if (!it->is_string()) return field_error(join_path(path, key), "expected a string");
  return it->get<std::string>();
}

Result<std::int64_t> opt_int(const Json& obj, std::string_view key, std::int64_t def,
                             std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return def;
  if (!it->is_number_integer()) return field_error(join_path(path, key), "expected an integer");
  return it->get<std::int64_t>();
}

Result<std::string> req_string(const Json& obj, std::string_view key, std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) {
    return field_error(join_path(path, key), "missing or not a string");
  }
  return it->get<std::string>();
}

Result<std::string> type_of(const Json& obj, std::string_view path) {
  if (!obj.is_object()) return field_error(path, "expected an object");
  return req_string(obj, "type", path);
}

}  // namespace recur::tokenizer::detail
