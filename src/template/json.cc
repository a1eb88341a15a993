// JSON in and out of template values. Out: Python's json.dumps(x, ensure_ascii=False,
// indent=...) as Hugging Face's tojson filter calls it (", " and ": " separators, keys in insertion
// order, floats as Python's repr). In: ordered JSON objects, ints kept apart from floats.
#include <nlohmann/json.hpp>

#include "template/interpreter.h"
#include "template/template.h"

namespace recur::tmpl {
namespace {

constexpr int kMaxJsonDepth = 512;

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

Status dump(std::string& out, const Value& v, int indent, int level) {
  if (level > kMaxJsonDepth) {
    return Status(StatusCode::kInvalidArgument, "tojson: value nested too deeply");
  }
  auto newline = [&](int lvl) {
    if (indent >= 0) out += "\n" + std::string(static_cast<std::size_t>(indent * lvl), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return Status::ok();
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return Status::ok();
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return Status::ok();
    case Kind::kFloat: {
      std::string r = python_float_repr(v.as_float());
      out += r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r == "nan" ? "NaN" : r;
      return Status::ok();
    }
    case Kind::kString:
      append_json_string(out, v.as_string());
      return Status::ok();
    case Kind::kList: {
      const auto& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return Status::ok();
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        RECUR_RETURN_IF_ERROR(dump(out, items[i], indent, level + 1));
      }
      newline(level);
      out += ']';
      return Status::ok();
    }
    case Kind::kDict: {
      if (v.is_namespace()) break;
      const auto& items = v.as_dict().items;
      if (items.empty()) {
        out += "{}";
        return Status::ok();
      }
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        append_json_string(out, items[i].first.is_bool()
                                    ? (items[i].first.as_bool() ? "true" : "false")
                                : items[i].first.is_none() ? "null"
                                                           : items[i].first.to_str());
        out += ": ";
        RECUR_RETURN_IF_ERROR(dump(out, items[i].second, indent, level + 1));
      }
      newline(level);
      out += '}';
      return Status::ok();
    }
    default:
      break;
  }
  return Status(StatusCode::kInvalidArgument,
                fmt::format("Object of type {} is not JSON serializable", v.type_name()));
}

// Deeper input is cut off (reported by value_from_json) rather than recursing without bound.
Value from_json(const nlohmann::ordered_json& j, int depth, bool& too_deep) {
  if (depth > kMaxJsonDepth) {
    too_deep = true;
    return Value::none();
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Value::List items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json(item, depth + 1, too_deep));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, item] : j.items())
        d.as_dict().set(k, from_json(item, depth + 1, too_deep));
      return d;
    }
    default:
      return Value::none();
  }
}

}  // namespace

Result<std::string> to_json(const Value& v, int indent) {
  std::string out;
  RECUR_RETURN_IF_ERROR(dump(out, v, indent, 0));
  return out;
}

Result<Value> value_from_json(std::string_view json_text) {
  auto j = nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Error(StatusCode::kInvalidArgument, "invalid JSON ({} bytes)", json_text.size());
  }
  bool too_deep = false;
  Value v = from_json(j, 0, too_deep);
  if (too_deep) {
    return Error(StatusCode::kInvalidArgument, "JSON nested deeper than {} levels", kMaxJsonDepth);
  }
  return v;
}

}  // namespace recur::tmpl
