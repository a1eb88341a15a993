// Python str/dict/list methods reachable from templates, with the immutable sandbox's rule that
// mutating methods (append, pop, update, ...) are refused, and the globals HF provides.
#include <algorithm>
#include <array>
#include <charconv>
#include <ctime>

#include "template/interpreter.h"
#include "template/text.h"

namespace recur::tmpl {
namespace {

constexpr std::array<std::string_view, 26> kStrMethods = {
    "split",      "rsplit",  "strip",   "lstrip",  "rstrip",      "startswith", "endswith",
    "replace",    "upper",   "lower",   "title",   "capitalize",  "find",       "rfind",
    "count",      "join",    "format",  "isdigit", "isalpha",     "isspace",    "isalnum",
    "splitlines", "isupper", "islower", "index",   "removeprefix"};
constexpr std::array<std::string_view, 10> kDictMethods = {
    "items", "keys", "values", "get", "copy", "pop", "update", "setdefault", "clear", "popitem"};
constexpr std::array<std::string_view, 10> kListMethods = {
    "index", "count", "copy", "append", "pop", "extend", "insert", "remove", "sort", "reverse"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Status method_error(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

Value split(const std::string& s, const Value& sep_v, std::int64_t maxsplit, bool from_right) {
  Value::List parts;
  if (sep_v.is_undefined() || sep_v.is_none()) {  // runs of whitespace, no empty strings
    std::vector<char32_t> cps = decode_utf8(s);
    std::size_t i = 0, n = cps.size();
    if (from_right) {  // rsplit(None, k): split from the end, the head keeps its leading space
      std::vector<std::string> words;
      std::size_t end = n;
      while (true) {
        while (end > 0 && is_py_space(cps[end - 1])) --end;
        if (end == 0) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(words.size()) == maxsplit) {
          words.push_back(encode_utf8(cps, 0, end));
          break;
        }
        std::size_t begin = end;
        while (begin > 0 && !is_py_space(cps[begin - 1])) --begin;
        words.push_back(encode_utf8(cps, begin, end));
        end = begin;
      }
      for (auto it = words.rbegin(); it != words.rend(); ++it) parts.emplace_back(*it);
      return Value::list(std::move(parts));
    }
    while (true) {
      while (i < n && is_py_space(cps[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(encode_utf8(cps, i, n));  // the remainder keeps trailing space
        break;
      }
      std::size_t j = i;
      while (j < n && !is_py_space(cps[j])) ++j;
      parts.emplace_back(encode_utf8(cps, i, j));
      i = j;
    }
    return Value::list(std::move(parts));
  }
  const std::string sep = sep_v.to_str();
  std::vector<std::string> pieces;
  if (!from_right) {
    std::size_t start = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(pieces.size()) < maxsplit) {
      std::size_t at = s.find(sep, start);
      if (at == std::string::npos) break;
      pieces.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
    pieces.push_back(s.substr(start));
  } else {
    std::size_t end = s.size();
    while (maxsplit < 0 || static_cast<std::int64_t>(pieces.size()) < maxsplit) {
      if (end < sep.size()) break;
      std::size_t at = s.rfind(sep, end - sep.size());
      if (at == std::string::npos) break;
      pieces.push_back(s.substr(at + sep.size(), end - at - sep.size()));
      end = at;
    }
    pieces.push_back(s.substr(0, end));
    std::reverse(pieces.begin(), pieces.end());
  }
  for (auto& p : pieces) parts.emplace_back(std::move(p));
  return Value::list(std::move(parts));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const std::string& a) { return prefix ? s.starts_with(a) : s.ends_with(a); };
  if (affix.is_list()) {
    return std::any_of(affix.as_list().begin(), affix.as_list().end(),
                       [&](const Value& a) { return one(a.to_str()); });
  }
  return one(affix.to_str());
}

// str.format with {}, {0} and {name} fields (no format specs beyond plain conversion).
Result<Value> str_format(const std::string& f, CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (f[i] == '{') {
      std::size_t close = f.find('}', i);
      if (close == std::string::npos)
        return method_error("single '{' encountered in format string");
      std::string field = f.substr(i + 1, close - i - 1);
      field = field.substr(0, field.find_first_of(":!"));
      Value v;
      if (field.empty()) {
        v = arg(args, auto_index++, "");
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        // A digit run past size_t names no argument (Python: replacement index out of range).
        std::size_t index = SIZE_MAX;
        std::from_chars(field.data(), field.data() + field.size(), index);
        v = index == SIZE_MAX ? Value() : arg(args, index, "");
      } else {
        v = arg(args, SIZE_MAX, field);
      }
      if (v.is_undefined())
        return method_error(fmt::format("format field '{}' has no value", field));
      out += v.to_str();
      i = close;
    } else {
      out += f[i];
    }
  }
  return Value(std::move(out));
}

Result<Value> str_replace(const std::string& s, CallArgs& args) {
  std::string from = arg(args, 0, "old").to_str(), to = arg(args, 1, "new").to_str();
  std::int64_t count = arg(args, 2, "count", Value(-1)).as_int();
  if (from.empty()) return method_error("replace with an empty pattern is not supported");
  std::string out;
  std::size_t start = 0;
  for (std::int64_t n = 0; count < 0 || n < count; ++n) {
    std::size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + to;
    start = at + from.size();
  }
  return Value(out + s.substr(start));
}

// find/rfind/index/count: positions are in code points, as Python counts them.
Result<Value> str_search(const std::string& s, std::string_view name, const std::string& needle) {
  if (name == "count") {
    if (needle.empty()) return Value(static_cast<std::int64_t>(count_code_points(s) + 1));
    std::int64_t n = 0;
    for (std::size_t at = s.find(needle); at != std::string::npos;
         at = s.find(needle, at + needle.size())) {
      ++n;
    }
    return Value(n);
  }
  std::size_t at = name == "rfind" ? s.rfind(needle) : s.find(needle);
  if (at == std::string::npos) {
    if (name == "index") return method_error("substring not found");
    return Value(-1);
  }
  return Value(static_cast<std::int64_t>(count_code_points(s.substr(0, at))));
}

Value str_splitlines(const std::string& s) {
  Value::List lines;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find_first_of("\r\n", start);
    if (nl == std::string::npos) nl = s.size();
    lines.emplace_back(s.substr(start, nl - start));
    start = nl + ((nl + 1 < s.size() && s[nl] == '\r' && s[nl + 1] == '\n') ? 2 : 1);
  }
  return Value::list(std::move(lines));
}

// isdigit/isalpha/isalnum/isspace/isupper/islower over ASCII.
Value str_predicate(const std::string& s, std::string_view name) {
  auto all = [&](int (*pred)(int)) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
      return pred(static_cast<unsigned char>(c)) != 0;
    });
  };
  if (name == "isdigit") return Value(all(::isdigit));
  if (name == "isalpha") return Value(all(::isalpha));
  if (name == "isalnum") return Value(all(::isalnum));
  if (name == "isspace") return Value(all(::isspace));
  bool cased = std::any_of(s.begin(), s.end(),
                           [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  bool none_other = std::none_of(s.begin(), s.end(), [&](char c) {
    auto u = static_cast<unsigned char>(c);
    return name == "isupper" ? std::islower(u) : std::isupper(u);
  });
  return Value(cased && none_other);
}

Result<Value> str_method(const std::string& s, std::string_view name, CallArgs& args) {
  Value a0 = arg(args, 0, "");
  if (name == "split" || name == "rsplit") {
    Value sep = arg(args, 0, "sep");
    std::int64_t maxsplit = arg(args, 1, "maxsplit", Value(-1)).as_int();
    if (sep.is_string() && sep.as_string().empty()) return method_error("empty separator");
    return split(s, sep, maxsplit, name == "rsplit");
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    std::string chars = a0.is_string() ? a0.as_string() : "";
    return Value(
        py_strip(s, a0.is_string() ? &chars : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    return Value(affix_match(s, a0, name == "startswith"));
  }
  if (name == "replace") return str_replace(s, args);
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    return str_search(s, name, a0.to_str());
  }
  if (name == "join") {
    RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(a0));
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? s : "") + items[i].to_str();
    return Value(std::move(out));
  }
  if (name == "format") return str_format(s, args);
  if (name == "removeprefix") {
    std::string p = a0.to_str();
    return Value(s.starts_with(p) ? s.substr(p.size()) : s);
  }
  if (name == "splitlines") return str_splitlines(s);
  return str_predicate(s, name);
}

}  // namespace

bool has_method(const Value& obj, std::string_view name) {
  if (obj.is_string()) return in(kStrMethods, name);
  if (obj.is_dict() && !obj.is_namespace()) return in(kDictMethods, name);
  if (obj.is_list()) return in(kListMethods, name);
  return false;
}

Result<Value> call_method(Interpreter& interp, const Value& obj, std::string_view name,
                          CallArgs& args, bool& found) {
  found = has_method(obj, name);
  if (!found) {
    return method_error(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
  }
  if (obj.is_string()) {
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
      CallArgs none;
      return interp.apply_filter(name, obj, none, 0);
    }
    return str_method(obj.as_string(), name, args);
  }
  if (obj.is_dict()) {
    const auto& d = obj.as_dict();
    if (name == "items" || name == "keys" || name == "values") {
      Value::List out;
      for (const auto& [k, v] : d.items) {
        out.push_back(name == "items" ? Value::tuple({k, v}) : name == "keys" ? k : v);
      }
      return Value::list(std::move(out));
    }
    if (name == "get") {
      Value key = arg(args, 0, "key");
      const Value* v = d.find_key(key);
      return v ? *v : arg(args, 1, "default", Value::none());
    }
    if (name == "copy") {
      Value copy = Value::dict();
      copy.as_dict().items = d.items;
      return copy;
    }
  } else {
    const auto& items = obj.as_list();
    if (name == "copy") return Value::list(items);
    if (name == "index" || name == "count") {
      Value needle = arg(args, 0, "");
      std::int64_t n = 0;
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!(items[i] == needle)) continue;
        if (name == "index") return Value(static_cast<std::int64_t>(i));
        ++n;
      }
      if (name == "index") return method_error(fmt::format("{} is not in list", needle.repr()));
      return Value(n);
    }
  }
  return method_error(
      fmt::format("access to attribute '{}' of '{}' object is unsafe", name, obj.type_name()));
}

namespace {

Result<Value> g_range(Interpreter&, CallArgs& args) {
  std::int64_t start = 0, stop = 0, step = 1;
  const auto& p = args.positional;
  for (const Value& v : p) {
    if (!v.is_int() && !v.is_bool()) return method_error("range() arguments must be integers");
  }
  if (p.size() == 1) {
    stop = p[0].as_int();
  } else if (p.size() >= 2) {
    start = p[0].as_int();
    stop = p[1].as_int();
    if (p.size() >= 3) step = p[2].as_int();
  } else {
    return method_error("range expected at least 1 argument, got 0");
  }
  if (step == 0) return method_error("range() arg 3 must not be zero");
  std::int64_t n = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
  if (n > 100000) return method_error("range too big, maximum size is 100000");
  Value::List out;
  for (std::int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
  return Value::list(std::move(out));
}

Result<Value> g_namespace(Interpreter& in, CallArgs& args) {
  Value ns = Value::namespace_object();
  in.track_namespace(ns);
  for (const Value& p : args.positional) {
    if (!p.is_dict()) return method_error("namespace() takes mappings as positional arguments");
    for (const auto& [k, v] : p.as_dict().items) ns.as_dict().set_key(k, v);
  }
  for (const auto& [k, v] : args.keywords) ns.as_dict().set(k, v);
  return ns;
}

Result<Value> g_dict(Interpreter&, CallArgs& args) {
  Value d = Value::dict();
  for (const Value& p : args.positional) {
    if (!p.is_dict()) return method_error("dict() takes a mapping as positional argument");
    for (const auto& [k, v] : p.as_dict().items) d.as_dict().set_key(k, v);
  }
  for (const auto& [k, v] : args.keywords) d.as_dict().set(k, v);
  return d;
}

Result<Value> g_raise_exception(Interpreter&, CallArgs& args) {
  return method_error(arg(args, 0, "message", Value("")).to_str());
}

Result<Value> g_strftime_now(Interpreter& in, CallArgs& args) {
  std::string f = arg(args, 0, "format", Value("")).to_str();
  std::time_t now = in.options().now != 0 ? in.options().now : std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[512];
  std::size_t n = f.empty() ? 0 : std::strftime(buf, sizeof(buf), f.c_str(), &tm);
  return Value(std::string(buf, n));
}

}  // namespace

void add_globals(std::vector<std::pair<std::string, Value>>& vars) {
  vars.emplace_back("range", Value::callable("range", g_range));
  vars.emplace_back("namespace", Value::callable("namespace", g_namespace));
  vars.emplace_back("dict", Value::callable("dict", g_dict));
  vars.emplace_back("raise_exception", Value::callable("raise_exception", g_raise_exception));
  vars.emplace_back("strftime_now", Value::callable("strftime_now", g_strftime_now));
}

}  // namespace recur::tmpl
