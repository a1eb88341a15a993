// JSON in and out of template values. Out: Python's json.dumps(x, ensure_ascii=False,
// indent=...) as Hugging Face's tojson filter calls it (", " and ": " separators, keys in insertion
// order, floats as Python's repr). In: ordered JSON objects, ints kept apart from floats.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "template/interpreter.h"
#include "template/template.h"
#include "template/text.h"

namespace recur::tmpl {
namespace {

constexpr int kMaxJsonDepth = 512;

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  if (ensure_ascii) {
    for (char32_t c : decode_utf8(s)) {
      if (c < 0x80) {
        std::string one(1, static_cast<char>(c));
        std::string escaped;
        append_json_string(escaped, one, false);
        out += escaped.substr(1, escaped.size() - 2);
      } else if (c < 0x10000) {
        out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
      } else {
        char32_t v = c - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      }
    }
    out += '"';
    return;
  }
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

std::string key_text(const Value& k) {
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_none()) return "null";
  return k.to_str();
}

Status dump(std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > kMaxJsonDepth) {
    return Status(StatusCode::kInvalidArgument, "tojson: value nested too deeply");
  }
  auto newline = [&](int lvl) {
    if (!o.pretty) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += o.indent;
  };
  const std::string& item_sep = o.item_sep;
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
      append_json_string(out, v.as_string(), o.ensure_ascii);
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
        RECUR_RETURN_IF_ERROR(dump(out, items[i], o, level + 1));
      }
      newline(level);
      out += ']';
      return Status::ok();
    }
    case Kind::kDict: {
      if (v.is_namespace()) break;
      auto items = v.as_dict().items;
      if (o.sort_keys) {
        Status failure;
        std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
          auto r = less_than(a.first, b.first);
          if (!r.is_ok()) failure = r.status();
          return r.is_ok() && *r;
        });
        RECUR_RETURN_IF_ERROR(failure);
      }
      if (items.empty()) {
        out += "{}";
        return Status::ok();
      }
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        append_json_string(out, key_text(items[i].first), o.ensure_ascii);
        out += o.key_sep;
        RECUR_RETURN_IF_ERROR(dump(out, items[i].second, o, level + 1));
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

Result<std::string> to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  RECUR_RETURN_IF_ERROR(dump(out, v, options, 0));
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
