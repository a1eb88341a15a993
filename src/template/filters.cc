// Jinja2's builtin filters and tests that chat templates use, with Jinja2 3.1's argument names
// and edge cases (jinja2/filters.py, jinja2/tests.py), plus Hugging Face's tojson.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "template/interpreter.h"
#include "template/text.h"

namespace recur::tmpl {

Value arg(CallArgs& args, std::size_t index, std::string_view keyword, Value fallback) {
  if (index < args.positional.size()) return args.positional[index];
  for (const auto& [k, v] : args.keywords) {
    if (k == keyword) return v;
  }
  return fallback;
}

namespace {

using FilterFn = Result<Value> (*)(Interpreter&, Value&, CallArgs&);

Status filter_error(std::string_view message) {
  return Status(StatusCode::kInvalidArgument, std::string(message));
}

// Looks up a dotted attribute path ("a.b" or "0") on an item, as Jinja2's make_attrgetter.
Value attribute_of(const Value& item, const Value& attribute) {
  if (attribute.is_int()) return get_item(item, attribute);
  Value v = item;
  std::string path = attribute.to_str();
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    std::int64_t index = 0;
    // A digit run past int64 indexes nothing (Jinja2: an IndexError, so undefined).
    if (numeric &&
        std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc()) {
      return Value::undefined(part);
    }
    v = numeric ? get_item(v, Value(index)) : get_item(v, Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Result<std::vector<Value>> items_of(const Value& v) { return iterate(v); }

Result<Value> f_length(Interpreter&, Value& v, CallArgs&) {
  switch (v.kind()) {
    case Kind::kString:
      return Value(static_cast<std::int64_t>(count_code_points(v.as_string())));
    case Kind::kList:
      return Value(static_cast<std::int64_t>(v.as_list().size()));
    case Kind::kDict:
      return Value(static_cast<std::int64_t>(v.as_dict().items.size()));
    case Kind::kUndefined:
      return Value(0);
    default:
      return filter_error(fmt::format("object of type '{}' has no len()", v.type_name()));
  }
}

Result<Value> f_default(Interpreter&, Value& v, CallArgs& args) {
  Value fallback = arg(args, 0, "default_value", Value(""));
  bool boolean = arg(args, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

Result<Value> f_trim(Interpreter&, Value& v, CallArgs& args) {
  Value chars = arg(args, 0, "chars");
  std::string c = chars.is_string() ? chars.as_string() : "";
  return Value(py_strip(v.to_str(), chars.is_string() ? &c : nullptr, true, true));
}

// HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Result<Value> f_tojson(Interpreter&, Value& v, CallArgs& args) {
  JsonOptions o;
  o.ensure_ascii = arg(args, 0, "ensure_ascii", Value(false)).truthy();
  Value indent = arg(args, 1, "indent", Value::none());
  if (indent.is_int() || indent.is_string()) {
    o.pretty = true;
    o.indent = indent.is_string()
                   ? indent.as_string()
                   : std::string(
                         static_cast<std::size_t>(std::max<std::int64_t>(0, indent.as_int())), ' ');
    o.item_sep = ",";
  }
  Value separators = arg(args, 2, "separators", Value::none());
  if (separators.is_list() && separators.as_list().size() == 2) {
    o.item_sep = separators.as_list()[0].to_str();
    o.key_sep = separators.as_list()[1].to_str();
  }
  o.sort_keys = arg(args, 3, "sort_keys", Value(false)).truthy();
  RECUR_ASSIGN_OR_RETURN(std::string s, to_json(v, o));
  return Value(std::move(s));
}

Result<Value> f_items(Interpreter&, Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict())
    return filter_error(
        fmt::format("can only get item pairs from a mapping, not {}", v.type_name()));
  Value::List out;
  for (const auto& [k, val] : v.as_dict().items) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

Result<Value> f_string(Interpreter&, Value& v, CallArgs&) { return Value(v.to_str()); }
Result<Value> f_safe(Interpreter&, Value& v, CallArgs&) { return v; }
Result<Value> f_upper(Interpreter&, Value& v, CallArgs&) { return Value(py_upper(v.to_str())); }
Result<Value> f_lower(Interpreter&, Value& v, CallArgs&) { return Value(py_lower(v.to_str())); }
Result<Value> f_capitalize(Interpreter&, Value& v, CallArgs&) {
  std::string s = v.to_str();
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    s[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
  }
  return Value(std::move(s));
}
Result<Value> f_title(Interpreter&, Value& v, CallArgs&) {
  std::string s = v.to_str();
  bool start = true;
  for (char& ch : s) {
    auto c = static_cast<unsigned char>(ch);
    ch = static_cast<char>(start ? std::toupper(c) : std::tolower(c));
    start = !std::isalnum(c) && c < 0x80 && c != '\'';
  }
  return Value(std::move(s));
}

Result<Value> f_join(Interpreter&, Value& v, CallArgs& args) {
  std::string sep = arg(args, 0, "d", Value("")).to_str();
  Value attribute = arg(args, 1, "attribute", Value::none());
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += (attribute.is_none() ? items[i] : attribute_of(items[i], attribute)).to_str();
  }
  return Value(std::move(out));
}

Result<Value> f_first(Interpreter&, Value& v, CallArgs&) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}
Result<Value> f_last(Interpreter&, Value& v, CallArgs&) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}
Result<Value> f_list(Interpreter&, Value& v, CallArgs&) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  return Value::list(std::move(items));
}
Result<Value> f_reverse(Interpreter&, Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<char32_t> cps = decode_utf8(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(encode_utf8(cps, 0, cps.size()));
  }
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_int(Interpreter&, Value& v, CallArgs& args) {
  Value fallback = arg(args, 0, "default", Value(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<std::int64_t>(v.as_float()));
  if (v.is_string()) {
    std::string s(lstrip_ws(rstrip_ws(v.as_string())));
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == 0) return Value(static_cast<std::int64_t>(i));
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == 0 && std::isfinite(d)) return Value(static_cast<std::int64_t>(d));
  }
  return fallback;
}
Result<Value> f_float(Interpreter&, Value& v, CallArgs& args) {
  Value fallback = arg(args, 0, "default", Value(0.0));
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string()) {
    std::string s(lstrip_ws(rstrip_ws(v.as_string())));
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == 0) return Value(d);
  }
  return fallback;
}
Result<Value> f_abs(Interpreter&, Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  return filter_error(fmt::format("bad operand type for abs(): '{}'", v.type_name()));
}
Result<Value> f_round(Interpreter&, Value& v, CallArgs& args) {
  std::int64_t precision = arg(args, 0, "precision", Value(0)).as_int();
  std::string method = arg(args, 1, "method", Value("common")).to_str();
  if (!v.is_number()) return filter_error("round() needs a number");
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.to_double() * scale;
  // "common" is Python's round(): halves go to the even neighbour.
  double r = method == "ceil"    ? std::ceil(x)
             : method == "floor" ? std::floor(x)
                                 : std::nearbyint(x);
  return Value(r / scale);
}

Result<Value> select_impl(Interpreter& in, Value& v, CallArgs& args, bool by_attr, bool keep) {
  // Jinja2 tests the value's truthiness before iterating: none, false, 0 and '' give an empty
  // sequence (templates rely on `{% set tools = none %}` ... `tools | selectattr(...)`).
  if (!v.truthy()) return Value::list({});
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  std::size_t first = by_attr ? 1 : 0;
  Value attribute = by_attr ? arg(args, 0, "attribute") : Value();
  Value test_name = arg(args, first, "");
  CallArgs test_args;
  for (std::size_t i = first + 1; i < args.positional.size(); ++i) {
    test_args.positional.push_back(args.positional[i]);
  }
  Value::List out;
  for (const Value& item : items) {
    Value probe = by_attr ? attribute_of(item, attribute) : item;
    bool ok = probe.truthy();
    if (test_name.is_string()) {
      CallArgs a = test_args;
      RECUR_ASSIGN_OR_RETURN(ok, in.apply_test(test_name.as_string(), probe, a, 0));
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Result<Value> f_select(Interpreter& in, Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, true);
}
Result<Value> f_reject(Interpreter& in, Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, false);
}
Result<Value> f_selectattr(Interpreter& in, Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, true);
}
Result<Value> f_rejectattr(Interpreter& in, Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, false);
}

Result<Value> f_map(Interpreter& in, Value& v, CallArgs& args) {
  if (!v.truthy())
    return Value::list({});  // as select_impl: Jinja2 maps nothing over a falsy value
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  Value attribute = arg(args, 99, "attribute");
  Value::List out;
  if (!attribute.is_undefined()) {
    Value fallback = arg(args, 99, "default");
    for (const Value& item : items) {
      Value x = attribute_of(item, attribute);
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) return filter_error("map requires a filter argument");
  std::string name = args.positional[0].to_str();
  for (const Value& item : items) {
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    RECUR_ASSIGN_OR_RETURN(Value x, in.apply_filter(name, item, rest, 0));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

Result<Value> sorted_impl(std::vector<Value> items, bool reverse, const Value& attribute,
                          bool case_sensitive) {
  auto key = [&](const Value& item) {
    Value k =
        attribute.is_undefined() || attribute.is_none() ? item : attribute_of(item, attribute);
    if (!case_sensitive && k.is_string()) {
      std::string s = k.as_string();
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return Value(std::move(s));
    }
    return k;
  };
  Status failure;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    auto r = reverse ? less_than(key(b), key(a)) : less_than(key(a), key(b));
    if (!r.is_ok()) failure = r.status();
    return r.is_ok() && *r;
  });
  if (!failure.is_ok()) return failure;
  return Value::list(std::move(items));
}

Result<Value> f_sort(Interpreter&, Value& v, CallArgs& args) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  return sorted_impl(std::move(items), arg(args, 0, "reverse", Value(false)).truthy(),
                     arg(args, 2, "attribute"),
                     arg(args, 1, "case_sensitive", Value(false)).truthy());
}

Result<Value> f_dictsort(Interpreter&, Value& v, CallArgs& args) {
  if (!v.is_dict()) return filter_error("dictsort needs a mapping");
  bool case_sensitive = arg(args, 0, "case_sensitive", Value(false)).truthy();
  std::string by = arg(args, 1, "by", Value("key")).to_str();
  bool reverse = arg(args, 2, "reverse", Value(false)).truthy();
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_dict().items) pairs.push_back(Value::tuple({k, val}));
  return sorted_impl(std::move(pairs), reverse, Value(by == "value" ? 1 : 0), case_sensitive);
}

Result<Value> f_unique(Interpreter&, Value& v, CallArgs& args) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  Value attribute = arg(args, 1, "attribute");
  Value::List out, seen;
  for (const Value& item : items) {
    Value k = attribute.is_undefined() ? item : attribute_of(item, attribute);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_batch(Interpreter&, Value& v, CallArgs& args) {
  std::int64_t n = arg(args, 0, "linecount", Value(1)).as_int();
  if (n <= 0) return filter_error("batch size must be positive");
  Value fill = arg(args, 1, "fill_with", Value::none());
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  Value::List out;
  for (std::size_t i = 0; i < items.size(); i += static_cast<std::size_t>(n)) {
    Value::List row(items.begin() + i, items.begin() + std::min(items.size(), i + n));
    while (!fill.is_none() && static_cast<std::int64_t>(row.size()) < n) row.push_back(fill);
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_escape(Interpreter&, Value& v, CallArgs&) {
  std::string out;
  for (char c : v.to_str()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value(std::move(out));
}

Result<Value> f_indent(Interpreter&, Value& v, CallArgs& args) {
  Value width = arg(args, 0, "width", Value(4));
  bool first = arg(args, 1, "first", Value(false)).truthy();
  bool blank = arg(args, 2, "blank", Value(false)).truthy();
  std::string pad =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, width.as_int())), ' ');
  // Jinja2's do_indent: split s + "\n" into lines; blank lines stay unindented unless `blank`.
  std::string s = v.to_str() + "\n";
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl = s.find('\n'); nl != std::string::npos; nl = s.find('\n', start)) {
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  std::string out = lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    out += "\n";
    if (blank || !lines[i].empty()) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(std::move(out));
}

Result<Value> f_wordcount(Interpreter&, Value& v, CallArgs&) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : v.to_str()) {
    bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result<Value> f_replace(Interpreter& in, Value& v, CallArgs& args) {
  Value s(v.to_str());
  bool found = false;
  return call_method(in, s, "replace", args, found);
}

Result<Value> f_format(Interpreter&, Value& v, CallArgs& args) {
  return binary_op("%", Value(v.to_str()), Value::tuple(args.positional));
}

Result<Value> f_sum(Interpreter&, Value& v, CallArgs& args) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  Value attribute = arg(args, 0, "attribute");
  Value total = arg(args, 1, "start", Value(0));
  for (const Value& item : items) {
    RECUR_ASSIGN_OR_RETURN(
        total,
        binary_op("+", total, attribute.is_undefined() ? item : attribute_of(item, attribute)));
  }
  return total;
}

Result<Value> min_max(Value& v, CallArgs& args, bool want_max) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(v));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  RECUR_ASSIGN_OR_RETURN(Value sorted,
                         sorted_impl(std::move(items), false, arg(args, 1, "attribute"),
                                     arg(args, 0, "case_sensitive", Value(false)).truthy()));
  return want_max ? sorted.as_list().back() : sorted.as_list().front();
}
Result<Value> f_min(Interpreter&, Value& v, CallArgs& a) { return min_max(v, a, false); }
Result<Value> f_max(Interpreter&, Value& v, CallArgs& a) { return min_max(v, a, true); }

Result<Value> f_center(Interpreter&, Value& v, CallArgs& args) {
  std::string s = v.to_str();
  auto width = static_cast<std::size_t>(
      std::max<std::int64_t>(0, arg(args, 0, "width", Value(80)).as_int()));
  std::size_t len = count_code_points(s);
  if (len >= width) return Value(s);
  std::size_t total = width - len;
  std::size_t left = total / 2 + (total & width & 1);
  return Value(std::string(left, ' ') + s + std::string(total - left, ' '));
}

const std::map<std::string_view, FilterFn>& filters() {
  static const std::map<std::string_view, FilterFn> table = {
      {"length", f_length},
      {"count", f_length},
      {"default", f_default},
      {"d", f_default},
      {"trim", f_trim},
      {"tojson", f_tojson},
      {"items", f_items},
      {"string", f_string},
      {"safe", f_safe},
      {"upper", f_upper},
      {"lower", f_lower},
      {"capitalize", f_capitalize},
      {"title", f_title},
      {"join", f_join},
      {"first", f_first},
      {"last", f_last},
      {"list", f_list},
      {"reverse", f_reverse},
      {"int", f_int},
      {"float", f_float},
      {"abs", f_abs},
      {"round", f_round},
      {"select", f_select},
      {"reject", f_reject},
      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr},
      {"map", f_map},
      {"sort", f_sort},
      {"dictsort", f_dictsort},
      {"unique", f_unique},
      {"batch", f_batch},
      {"escape", f_escape},
      {"e", f_escape},
      {"forceescape", f_escape},
      {"indent", f_indent},
      {"wordcount", f_wordcount},
      {"replace", f_replace},
      {"format", f_format},
      {"sum", f_sum},
      {"min", f_min},
      {"max", f_max},
      {"center", f_center},
  };
  return table;
}

}  // namespace

Result<Value> Interpreter::apply_filter(std::string_view name, Value operand, CallArgs& args,
                                        std::uint32_t offset) {
  auto it = filters().find(name);
  if (it == filters().end()) return error(offset, fmt::format("no filter named '{}'", name));
  RECUR_RETURN_IF_ERROR(count_step(offset));
  // Filters that stringify their input print Undefined as ""; the others fail on it, as in
  // Jinja2 (e.g. tojson of an undefined value).
  if (operand.is_undefined() &&
      (name == "tojson" || name == "int" || name == "float" || name == "abs" || name == "round")) {
    return error(
        offset, operand.undefined_hint().empty() ? "value is undefined" : operand.undefined_hint());
  }
  auto r = it->second(*this, operand, args);
  if (!r.is_ok()) return locate(r.status(), offset);
  return r;
}

namespace {

bool is_sequence(const Value& v) {
  return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
}

// Tests that look only at the value's type or truth.
const std::map<std::string_view, bool (*)(const Value&)>& kind_tests() {
  static const std::map<std::string_view, bool (*)(const Value&)> table = {
      {"defined", [](const Value& v) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v) { return v.is_undefined(); }},
      {"none", [](const Value& v) { return v.is_none(); }},
      {"boolean", [](const Value& v) { return v.is_bool(); }},
      {"true", [](const Value& v) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v) { return v.is_int(); }},
      {"float", [](const Value& v) { return v.is_float(); }},
      {"number", [](const Value& v) { return v.is_number(); }},
      {"string", [](const Value& v) { return v.is_string(); }},
      {"mapping", [](const Value& v) { return v.is_dict() && !v.is_namespace(); }},
      {"iterable",
       [](const Value& v) {
         return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
       }},
      {"sequence", [](const Value& v) { return is_sequence(v) || v.is_undefined(); }},
      {"callable", [](const Value& v) { return v.is_callable(); }},
  };
  return table;
}

// eq/ne/lt/gt/le/ge and their aliases, as Python's comparison of v with other.
Result<bool> compare_test(std::string_view op, const Value& v, const Value& other) {
  if (op == "==") return v == other;
  if (op == "!=") return !(v == other);
  if (op == "<") return less_than(v, other);
  if (op == ">") return less_than(other, v);
  if (op == "<=") {
    RECUR_ASSIGN_OR_RETURN(bool gt, less_than(other, v));
    return !gt;
  }
  RECUR_ASSIGN_OR_RETURN(bool lt, less_than(v, other));
  return !lt;
}

Result<bool> number_test(std::string_view name, const Value& v, const Value& other) {
  if (!v.is_int() && !v.is_bool()) {
    return filter_error(fmt::format("test '{}' needs an integer", name));
  }
  if (name == "divisibleby") {
    if (!other.is_int() || other.as_int() == 0) {
      return filter_error("divisibleby needs a non-zero integer");
    }
    return v.as_int() % other.as_int() == 0;
  }
  return (v.as_int() % 2 != 0) == (name == "odd");
}

bool case_test(std::string_view name, const Value& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.as_string();
  bool has_cased = std::any_of(s.begin(), s.end(),
                               [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  bool all = std::none_of(s.begin(), s.end(), [&](char c) {
    auto u = static_cast<unsigned char>(c);
    return name == "lower" ? std::isupper(u) : std::islower(u);
  });
  return has_cased && all;
}

}  // namespace

Result<bool> Interpreter::apply_test(std::string_view name, const Value& v, CallArgs& args,
                                     std::uint32_t offset) {
  static const std::map<std::string_view, std::string_view> kCompare = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="},
      {"lt", "<"},  {"lessthan", "<"}, {"<", "<"},   {"gt", ">"},  {"greaterthan", ">"},
      {">", ">"},   {"le", "<="},      {"<=", "<="}, {"ge", ">="}, {">=", ">="}};
  if (auto it = kind_tests().find(name); it != kind_tests().end()) return it->second(v);
  Value other = arg(args, 0, "");
  Result<bool> r = false;
  if (auto it = kCompare.find(name); it != kCompare.end()) {
    r = compare_test(it->second, v, other);
  } else if (name == "odd" || name == "even" || name == "divisibleby") {
    r = number_test(name, v, other);
  } else if (name == "lower" || name == "upper") {
    return case_test(name, v);
  } else if (name == "sameas") {
    return v.kind() == other.kind() && v == other;
  } else if (name == "in") {
    r = contains(other, v);
  } else if (name == "filter") {
    return filters().count(v.to_str()) > 0;
  } else if (name == "test") {
    return true;
  } else {
    return error(offset, fmt::format("no test named '{}'", name));
  }
  if (!r.is_ok()) return locate(r.status(), offset);
  return *r;
}

}  // namespace recur::tmpl
