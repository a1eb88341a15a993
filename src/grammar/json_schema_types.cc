// The typed schemas of the JSON Schema compiler: objects (properties in order, optional ones
// without blowup, additional keys that are not declared names), arrays (prefixItems, items, count
// bounds), strings (length, pattern, format), integers (exact ranges), numbers (sign only), and
// allOf's merge of object schemas.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "grammar/grammar.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_internal.h"

namespace recur::grammar::schema_detail {
namespace {

constexpr const char* kQuote = R"("\"")";  // the GBNF literal of a double quote
constexpr double kIntegerLimit = 1e18;     // bounds past this are open (int64 arithmetic)

bool any_key(const Json& s, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
}

std::string trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

Result<std::optional<std::int64_t>> Compiler::count(const Json& s, const std::string& path,
                                                    const char* keyword) {
  if (!s.contains(keyword)) return std::optional<std::int64_t>();
  const Json& v = s[keyword];
  bool integral = v.is_number() && std::floor(v.get<double>()) == v.get<double>();
  if (!integral || v.get<double>() < 0) {
    return error(path, fmt::format("'{}' must be a non-negative integer", keyword));
  }
  return std::optional<std::int64_t>(
      static_cast<std::int64_t>(std::min(v.get<double>(), static_cast<double>(1LL << 40))));
}

Result<std::string> Compiler::repeat(const std::string& item, std::int64_t lo,
                                     std::optional<std::int64_t> hi, const std::string& path,
                                     std::string_view keyword) {
  if (std::max(lo, hi.value_or(0)) > kMaxElements / 4) {
    if (!options_.lenient || lo > kMaxElements / 4) {
      return error(path, fmt::format("'{}' is too large to express (at most {})", keyword,
                                     kMaxElements / 4));
    }
    ignored_.push_back(fmt::format("{}: '{}'", path, keyword));
    hi.reset();
  }
  // (plain integers rather than the optional: GCC's maybe-uninitialized misfires on it)
  const bool bounded = hi.has_value();
  std::int64_t top = hi.value_or(0);
  elements_ += bounded ? top : lo + 1;
  std::vector<std::string> parts;
  for (; lo > kMaxRepeat; lo -= kMaxRepeat, top -= kMaxRepeat) {
    parts.push_back(fmt::format("{}{{{}}}", item, kMaxRepeat));
  }
  if (!bounded) {
    parts.push_back(lo == 0   ? item + "*"
                    : lo == 1 ? item + "+"
                              : fmt::format("{}{{{},}}", item, lo));
  } else {
    if (lo == 1) parts.push_back(item);
    if (lo > 1) parts.push_back(fmt::format("{}{{{}}}", item, lo));
    for (std::int64_t span = top - lo; span > 0; span -= std::min<std::int64_t>(span, kMaxRepeat)) {
      std::int64_t n = std::min<std::int64_t>(span, kMaxRepeat);
      parts.push_back(n == 1 ? item + "?" : fmt::format("{}{{0,{}}}", item, n));
    }
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// ---- strings ----

Result<std::string> Compiler::string_body(const Json& s, const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(auto min_length, count(s, path, "minLength"));
  RECUR_ASSIGN_OR_RETURN(auto max_length, count(s, path, "maxLength"));
  std::optional<std::string> content;
  const char* content_keyword = nullptr;
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return error(path, "'pattern' must be a string");
    RECUR_ASSIGN_OR_RETURN(content,
                           pattern_to_gbnf(s["pattern"].get<std::string>(), path, &elements_));
    content_keyword = "pattern";
    primitive("char");
  }
  if (s.contains("format")) {
    if (!s["format"].is_string()) return error(path, "'format' must be a string");
    std::string format = s["format"].get<std::string>();
    std::optional<std::string> f = format_to_gbnf(format);
    if (!f) {
      RECUR_RETURN_IF_ERROR(
          unsupported(path, "format", fmt::format("'format' \"{}\" is not supported", format)));
    } else if (content) {
      RECUR_RETURN_IF_ERROR(
          unsupported(path, "format", "'format' next to 'pattern' is not supported"));
    } else {
      content = f;
      content_keyword = "format";
    }
  }
  if (content) {
    for (const char* k : {"minLength", "maxLength"}) {
      if (!s.contains(k)) continue;
      RECUR_RETURN_IF_ERROR(unsupported(
          path, k, fmt::format("'{}' next to '{}' is not supported", k, content_keyword)));
    }
    return fmt::format("{} {} {}", kQuote, *content, kQuote);
  }
  if (!min_length && !max_length) return primitive("string");
  if (min_length && max_length && *max_length < *min_length) {
    return error(path, "'maxLength' is less than 'minLength'");
  }
  RECUR_ASSIGN_OR_RETURN(std::string chars, repeat(primitive("char"), min_length.value_or(0),
                                                   max_length, path, "maxLength"));
  return trim(fmt::format("{} {} {}", kQuote, chars, kQuote));
}

// ---- numbers ----

namespace {

struct Bounds {
  std::optional<double> lower, upper;  // inclusive
  bool lower_exclusive = false, upper_exclusive = false;
};

// minimum / maximum / exclusiveMinimum / exclusiveMaximum (numeric, or draft 4's booleans).
Result<Bounds> read_bounds(const Json& s, const std::string& path) {
  Bounds b;
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    const Json& v = s[k];
    bool exclusive = k[0] == 'e';
    bool is_lower = std::string_view(k).find("in") != std::string_view::npos;
    if (exclusive && v.is_boolean()) continue;  // draft 4: read with minimum / maximum
    if (!v.is_number()) {
      return Error(StatusCode::kInvalidArgument, "{}: '{}' must be a number", path, k);
    }
    double x = v.get<double>();
    bool draft4 = !exclusive && s.contains(is_lower ? "exclusiveMinimum" : "exclusiveMaximum") &&
                  s[is_lower ? "exclusiveMinimum" : "exclusiveMaximum"].is_boolean() &&
                  s[is_lower ? "exclusiveMinimum" : "exclusiveMaximum"].get<bool>();
    bool excl = exclusive || draft4;
    if (is_lower && (!b.lower || x > *b.lower || (x == *b.lower && excl))) {
      b.lower = x;
      b.lower_exclusive = excl;
    } else if (!is_lower && (!b.upper || x < *b.upper || (x == *b.upper && excl))) {
      b.upper = x;
      b.upper_exclusive = excl;
    }
  }
  return b;
}

}  // namespace

Result<std::string> Compiler::integer_body(const Json& s, const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(Bounds b, read_bounds(s, path));
  std::optional<std::int64_t> lo, hi;
  if (b.lower) {
    double v = b.lower_exclusive ? std::floor(*b.lower) + 1 : std::ceil(*b.lower);
    if (v > kIntegerLimit) return error(path, "'minimum' is out of the supported range");
    if (v >= -kIntegerLimit) lo = static_cast<std::int64_t>(v);
  }
  if (b.upper) {
    double v = b.upper_exclusive ? std::ceil(*b.upper) - 1 : std::floor(*b.upper);
    if (v < -kIntegerLimit) return error(path, "'maximum' is out of the supported range");
    if (v <= kIntegerLimit) hi = static_cast<std::int64_t>(v);
  }
  if (!lo && !hi) return primitive("integer");
  if (lo && hi && *lo > *hi) return error(path, "no integer lies within 'minimum' and 'maximum'");
  std::string body = integer_range_gbnf(lo, hi);
  elements_ += static_cast<std::int64_t>(body.size());
  return body;
}

Result<std::string> Compiler::number_body(const Json& s, const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(Bounds b, read_bounds(s, path));
  const std::string magnitude =
      R"(( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [\x2d+]? [0-9]{1,3} )?)";
  if (b.lower && *b.lower >= 0) return magnitude;
  if (b.upper && (*b.upper < 0 || (*b.upper == 0 && b.upper_exclusive))) {
    return "\"-\" " + magnitude;
  }
  return primitive("number");
}

// ---- objects ----

std::string Compiler::not_in_names(const std::vector<std::string>& names) {
  struct Node {
    std::map<char32_t, int> next;
    bool end = false;
  };
  std::vector<Node> trie(1);
  for (const auto& name : names) {
    int at = 0;
    for (char32_t c : decode_utf8(name)) {
      auto it = trie[at].next.find(c);
      if (it == trie[at].next.end()) {
        trie.emplace_back();
        it = trie[at].next.emplace(c, static_cast<int>(trie.size() - 1)).first;
      }
      at = it->second;
    }
    trie[at].end = true;
  }
  const std::string any = primitive("char");
  // Content that, after the prefix of node `at`, does not complete a name.
  std::function<std::string(int)> rest = [&](int at) {
    std::vector<std::string> alts;
    CodepointSet others = CodepointSet::of(0, kMaxCodepoint);
    for (auto [c, child] : trie[at].next) {
      std::string q = json_quote(utf8_of(c));
      alts.push_back(trim(gbnf_literal(q.substr(1, q.size() - 2)) + " " + rest(child)));
      others = others.minus(CodepointSet::of(c, c));
    }
    // Another character; every escape form when no next character needs one (a key is compared
    // as written: "\u0061" is not "a").
    bool plain = std::all_of(trie[at].next.begin(), trie[at].next.end(), [](const auto& e) {
      return e.first >= 0x20 && e.first != '"' && e.first != '\\';
    });
    std::string other = json_char_in(others);
    if (plain) {
      CodepointSet unescaped = others.minus(CodepointSet({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
      other = fmt::format(R"(( {} | "\\" ( [\x22\x5c/bfnrt] | "u" [0-9a-fA-F]{{4}} ) ))",
                          gbnf_class(unescaped));
    }
    alts.push_back(other + " " + any + "*");
    std::string out = "( " + join_alts(alts) + " )";
    return trie[at].end ? out : out + "?";
  };
  elements_ += static_cast<std::int64_t>(trie.size()) * 8;
  return rest(0);
}

Result<std::string> Compiler::object_body(const Json& s, const std::string& path,
                                          const std::string& hint, int depth) {
  const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
  if (props && !props->is_object()) return error(path, "'properties' must be an object");
  std::vector<std::string> required;
  if (s.contains("required")) {
    const Json& r = s["required"];
    bool ok = r.is_array() &&
              std::all_of(r.begin(), r.end(), [](const Json& e) { return e.is_string(); });
    if (!ok) return error(path, "'required' must be an array of strings");
    for (const auto& e : r) required.push_back(e.get<std::string>());
  }
  const Json* additional =
      s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
  if (additional && !additional->is_boolean() && !additional->is_object()) {
    return error(path, "'additionalProperties' must be a boolean or a schema");
  }
  RECUR_ASSIGN_OR_RETURN(auto min_props, count(s, path, "minProperties"));
  RECUR_ASSIGN_OR_RETURN(auto max_props, count(s, path, "maxProperties"));
  bool extra_allowed = additional ? (!additional->is_boolean() || additional->get<bool>()) : !props;
  std::string extra_value;
  if (extra_allowed) {
    if (additional && additional->is_object()) {
      RECUR_ASSIGN_OR_RETURN(extra_value, child(*additional, path_key(path, "additionalProperties"),
                                                hint + "-additional", depth));
    } else {
      extra_value = primitive("value");
    }
  }
  // Declared properties in order, then required names that only additionalProperties allows.
  std::vector<std::pair<std::string, const Json*>> declared;
  if (props) {
    for (auto it = props->begin(); it != props->end(); ++it) declared.emplace_back(it.key(), &*it);
  }
  for (const auto& r : required) {
    auto known = [&](const auto& d) { return d.first == r; };
    if (std::any_of(declared.begin(), declared.end(), known)) continue;
    if (!extra_allowed) {
      return error(path, fmt::format("'required' names \"{}\", which 'properties' does not "
                                     "declare and 'additionalProperties' does not allow",
                                     r));
    }
    declared.emplace_back(r, additional && additional->is_object() ? additional : nullptr);
  }
  if (!props && !additional && required.empty() && !min_props && !max_props) {
    return primitive("object");
  }
  primitive("ws");
  std::size_t n = declared.size();
  std::vector<std::string> kvs, names;
  std::vector<bool> is_required;
  for (const auto& [name, schema] : declared) {
    std::string value = extra_value;
    if (schema && schema != additional) {
      RECUR_ASSIGN_OR_RETURN(value, child(*schema, path_key(path_key(path, "properties"), name),
                                          hint + "-" + rule_hint(name), depth));
    }
    kvs.push_back(fmt::format("{} {} \":\" {} {}", gbnf_literal(json_quote(name)), primitive("ws"),
                              primitive("ws"), value));
    names.push_back(name);
    is_required.push_back(std::find(required.begin(), required.end(), name) != required.end());
  }
  std::size_t n_required = std::count(is_required.begin(), is_required.end(), true);
  bool non_empty = false;
  if (min_props && *min_props > static_cast<std::int64_t>(n_required)) {
    if (*min_props == 1) {
      non_empty = true;
    } else {
      RECUR_RETURN_IF_ERROR(unsupported(path, "minProperties"));
    }
  }
  if (max_props && (extra_allowed || *max_props < static_cast<std::int64_t>(n))) {
    if (*max_props == 0 && n_required == 0) return std::string(R"("{" ws "}")");
    RECUR_RETURN_IF_ERROR(unsupported(path, "maxProperties"));
  }
  std::string kv_extra;
  if (extra_allowed) {
    // The other keys' grammar spells each name's prefixes as nested groups, one per character.
    for (const auto& name : names) {
      if (decode_utf8(name).size() > kMaxExcludedNameChars) {
        return error(path, fmt::format("property names longer than {} characters cannot be told "
                                       "apart from additional properties",
                                       kMaxExcludedNameChars));
      }
    }
    std::string key =
        n == 0
            ? primitive("string")
            : add_rule(hint + "-key", fmt::format("{} {} {}", kQuote, not_in_names(names), kQuote));
    kv_extra =
        add_rule(hint + "-additional-kv", fmt::format("{} ws \":\" ws {}", key, extra_value));
  }
  const std::string sep = R"(ws "," ws )";
  const std::string extra_tail = extra_allowed ? "( " + sep + kv_extra + " )*" : "";
  std::size_t first_required =
      std::find(is_required.begin(), is_required.end(), true) - is_required.begin();
  auto piece = [&](std::size_t i) {
    return is_required[i] ? sep + kvs[i] : "( " + sep + kvs[i] + " )?";
  };
  // After property i-1 (or one before it) was written: properties i.. and the additional ones.
  // Up to the first required one each suffix is a rule (shared by the alternatives below), so
  // the size stays linear in the number of properties.
  std::function<std::string(std::size_t)> after = [&](std::size_t i) -> std::string {
    if (i == n) return extra_tail;
    if (i > first_required) return trim(piece(i) + " " + after(i + 1));
    return add_rule(hint + "-rest", trim(piece(i) + " " + after(i + 1)));
  };
  std::vector<std::string> alts;
  for (std::size_t j = 0; j < n && j <= first_required; ++j) {
    alts.push_back(trim(kvs[j] + " " + after(j + 1)));
  }
  if (extra_allowed && first_required == n) alts.push_back(trim(kv_extra + " " + extra_tail));
  if (alts.empty()) return std::string(R"("{" ws "}")");
  std::string inner = alts.size() == 1 ? alts[0] : "( " + join_alts(alts) + " )";
  if (first_required == n && !non_empty) return fmt::format(R"("{{" ws ( {} ws )? "}}")", inner);
  return fmt::format(R"("{{" ws {} ws "}}")", inner);
}

// ---- arrays ----

Result<std::string> Compiler::array_body(const Json& s, const std::string& path,
                                         const std::string& hint, int depth) {
  RECUR_ASSIGN_OR_RETURN(auto min_items, count(s, path, "minItems"));
  RECUR_ASSIGN_OR_RETURN(auto max_items, count(s, path, "maxItems"));
  std::int64_t lo = min_items.value_or(0);
  if (max_items && *max_items < lo) return error(path, "'maxItems' is less than 'minItems'");
  // Tuple positions, then the schema of the rest ("" when there may be no more).
  const Json* prefix = nullptr;
  const Json* rest = nullptr;
  std::string prefix_key = "prefixItems", rest_key = "items";
  if (s.contains("prefixItems")) {
    prefix = &s["prefixItems"];
    if (s.contains("items")) rest = &s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {  // draft 7 tuples
    prefix = &s["items"];
    prefix_key = "items";
    rest_key = "additionalItems";
    if (s.contains("additionalItems")) rest = &s["additionalItems"];
  } else if (s.contains("items")) {
    rest = &s["items"];
  }
  if (prefix && !prefix->is_array())
    return error(path, "'prefixItems' must be an array of schemas");
  if (rest && !rest->is_boolean() && !rest->is_object()) {
    return error(path, fmt::format("'{}' must be a schema", rest_key));
  }
  std::vector<std::string> positions;
  for (std::size_t i = 0; prefix && i < prefix->size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(std::string p,
                           child((*prefix)[i], path_index(path_key(path, prefix_key), i),
                                 fmt::format("{}-{}", hint, i), depth));
    positions.push_back(p);
  }
  std::string item;
  if (!rest || rest->is_boolean()) {
    if (!rest || rest->get<bool>()) item = primitive("value");
  } else {
    RECUR_ASSIGN_OR_RETURN(item, child(*rest, path_key(path, rest_key), hint + "-item", depth));
  }
  auto k = static_cast<std::int64_t>(positions.size());
  std::optional<std::int64_t> hi = max_items;
  if (item.empty()) hi = std::min(hi.value_or(k), k);
  if (lo > hi.value_or(lo)) {
    return error(path, fmt::format("'minItems' asks for more items than '{}' allows", prefix_key));
  }
  primitive("ws");
  const std::string sep = R"(ws "," ws )";
  // Positions from i on, position i - 1 written; position i required below `need`.
  std::function<Result<std::string>(std::int64_t, std::int64_t)> from =
      [&](std::int64_t i, std::int64_t need) -> Result<std::string> {
    if (hi && i >= *hi) return std::string();
    std::string lead = i == 0 ? "" : sep;
    if (i < k) {
      RECUR_ASSIGN_OR_RETURN(std::string tail, from(i + 1, need));
      std::string p = trim(lead + positions[i] + " " + tail);
      return i < need ? p : "( " + p + " )?";
    }
    std::int64_t t_lo = std::max<std::int64_t>(need - k, 0);
    std::optional<std::int64_t> t_hi;
    if (hi) t_hi = *hi - k;
    if (k > 0) return repeat("( " + sep + item + " )", t_lo, t_hi, path, "maxItems");
    // No tuple: the first item has no separator.
    std::optional<std::int64_t> more_hi;
    if (t_hi) more_hi = *t_hi - 1;
    RECUR_ASSIGN_OR_RETURN(std::string more,
                           repeat("( " + sep + item + " )", std::max<std::int64_t>(t_lo - 1, 0),
                                  more_hi, path, "maxItems"));
    std::string p = trim(item + " " + more);
    return t_lo >= 1 ? p : "( " + p + " )?";
  };
  if (hi && *hi == 0) return std::string(R"("[" ws "]")");
  RECUR_ASSIGN_OR_RETURN(std::string elements, from(0, std::max<std::int64_t>(lo, 1)));
  if (lo == 0) return fmt::format(R"("[" ws ( {} ws )? "]")", elements);
  return fmt::format(R"("[" ws {} ws "]")", elements);
}

// ---- types and allOf ----

Result<std::string> Compiler::typed_body(const Json& s, const std::string& path,
                                         const std::string& hint, int depth, bool* nullable) {
  static const char* const kTypes[] = {"string", "number", "integer", "boolean",
                                       "null",   "object", "array"};
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty() &&
               std::all_of(t.begin(), t.end(), [](const Json& e) { return e.is_string(); })) {
      for (const auto& e : t) types.push_back(e.get<std::string>());
    } else {
      return error(path, "'type' must be a type name or a non-empty array of them");
    }
    for (const auto& name : types) {
      if (std::find(std::begin(kTypes), std::end(kTypes), name) == std::end(kTypes)) {
        return error(path, fmt::format("'type' \"{}\" is not a JSON Schema type", name));
      }
    }
  } else {  // no type: the types whose keywords appear (any value when none does)
    if (any_key(s, {"properties", "additionalProperties", "required", "minProperties",
                    "maxProperties"})) {
      types.push_back("object");
    }
    if (any_key(s, {"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
    if (any_key(s, {"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (any_key(s, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("number");
    }
    if (types.empty()) {
      *nullable = false;  // "value" has null already
      return primitive("value");
    }
  }
  if (std::erase(types, "null") > 0) *nullable = true;
  if (std::count(types.begin(), types.end(), "number")) std::erase(types, "integer");
  if (types.empty()) {
    *nullable = false;
    return primitive("null");
  }
  std::vector<std::string> alts;
  for (const auto& t : types) {
    std::string body;
    if (t == "string") {
      RECUR_ASSIGN_OR_RETURN(body, string_body(s, path));
    } else if (t == "integer") {
      RECUR_ASSIGN_OR_RETURN(body, integer_body(s, path));
    } else if (t == "number") {
      RECUR_ASSIGN_OR_RETURN(body, number_body(s, path));
    } else if (t == "boolean") {
      body = primitive("boolean");
    } else if (t == "object") {
      RECUR_ASSIGN_OR_RETURN(body, object_body(s, path, hint, depth));
    } else {
      RECUR_ASSIGN_OR_RETURN(body, array_body(s, path, hint, depth));
    }
    alts.push_back(types.size() == 1 ? body : named(hint + "-" + t, body));
  }
  return join_alts(alts);
}

Result<std::string> Compiler::all_of(const Json& s, const std::string& path,
                                     const std::string& hint, int depth) {
  const Json& subs = s["allOf"];
  std::string subs_path = path_key(path, "allOf");
  if (!subs.is_array() || subs.empty()) {
    return error(path, "'allOf' must be a non-empty array of schemas");
  }
  bool alone = true;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it.key() != "allOf" && it.key() != "nullable" && !is_annotation(it.key())) alone = false;
  }
  if (alone && subs.size() == 1) return visit(subs[0], path_index(subs_path, 0), hint, depth + 1);
  // Merge: this schema's own object keywords and each part's (a $ref followed to its target).
  Json merged = {{"type", "object"}, {"properties", Json::object()}};
  std::vector<std::pair<const Json*, std::string>> parts = {{&s, path}};
  for (std::size_t i = 0; i < subs.size(); ++i)
    parts.emplace_back(&subs[i], path_index(subs_path, i));
  for (auto [part, part_path] : parts) {
    for (int hops = 0; part->is_object() && part->contains("$ref") && hops < kMaxDepth; ++hops) {
      RECUR_ASSIGN_OR_RETURN(
          part,
          resolve((*part)["$ref"].is_string() ? (*part)["$ref"].get<std::string>() : std::string(),
                  part_path, &part_path));
    }
    if (!part->is_object()) {
      return error(part_path, "'allOf' merges object schemas only");
    }
    for (auto it = part->begin(); it != part->end(); ++it) {
      const std::string& k = it.key();
      const Json& v = it.value();
      if (k == "allOf" || k == "nullable" || is_annotation(k)) continue;
      if (k == "type" && v == "object") continue;
      if (k == "properties" && v.is_object()) {
        for (auto p = v.begin(); p != v.end(); ++p) {
          Json& into = merged["properties"];
          if (into.contains(p.key()) && into[p.key()] != p.value()) {
            return error(part_path, fmt::format("'allOf' declares property \"{}\" twice, "
                                                "differently",
                                                p.key()));
          }
          into[p.key()] = p.value();
        }
      } else if (k == "required" && v.is_array()) {
        for (const auto& r : v) {
          if (!merged.contains("required")) merged["required"] = Json::array();
          if (std::find(merged["required"].begin(), merged["required"].end(), r) ==
              merged["required"].end()) {
            merged["required"].push_back(r);
          }
        }
      } else if (k == "additionalProperties") {
        if (merged.contains(k) && merged[k] != v) {
          return error(part_path, "'allOf' parts disagree on 'additionalProperties'");
        }
        merged[k] = v;
      } else {
        RECUR_RETURN_IF_ERROR(unsupported(
            part_path, k,
            fmt::format("'allOf' merges object schemas only: '{}' cannot be merged", k)));
      }
    }
  }
  return visit(merged, path, hint, depth + 1);
}

}  // namespace recur::grammar::schema_detail
