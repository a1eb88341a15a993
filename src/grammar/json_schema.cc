// JSON Schema to GBNF: one rule per schema that needs one (deduplicated by body), one rule per
// $ref target (so recursion terminates), shared rules for the primitive JSON values. The keyword
// list and what each does is docs/json-schema.md.
#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "grammar/grammar.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/json_schema_internal.h"

namespace recur::grammar::schema_detail {
namespace {

// The shared rules, each with the rules it uses.
struct Primitive {
  const char* name;
  const char* body;
  std::vector<const char*> uses;
};
const Primitive kPrimitives[] = {
    {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
    {"char", kJsonCharBody.data(), {}},
    {"string", R"("\"" char* "\"")", {"char"}},
    {"number",
     R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [\x2d+]? [0-9]{1,3} )?)",
     {}},
    {"integer", R"("0" | "-"? [1-9] [0-9]{0,15})", {}},
    {"boolean", R"("true" | "false")", {}},
    {"null", R"("null")", {}},
    {"value",
     "object | array | string | number | boolean | null",
     {"object", "array", "string", "number", "boolean", "null"}},
    {"object",
     R"("{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}")",
     {"ws", "string", "value"}},
    {"array", R"("[" ws ( value ( ws "," ws value )* ws )? "]")", {"ws", "value"}},
};

const std::set<std::string, std::less<>> kAnnotations = {
    "title",      "description", "default",   "examples", "$schema", "$id",        "$comment",
    "deprecated", "readOnly",    "writeOnly", "strict",   "$defs",   "definitions"};
const std::set<std::string, std::less<>> kSupported = {"type",
                                                       "nullable",
                                                       "enum",
                                                       "const",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "minProperties",
                                                       "maxProperties",
                                                       "items",
                                                       "prefixItems",
                                                       "additionalItems",
                                                       "minItems",
                                                       "maxItems",
                                                       "minLength",
                                                       "maxLength",
                                                       "pattern",
                                                       "format",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum"};

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool is_pure_ref(const Json& s) {
  if (!s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (it.key() != "$ref" && !kAnnotations.count(it.key())) return false;
  }
  return true;
}

}  // namespace

bool is_annotation(std::string_view keyword) { return kAnnotations.count(keyword) > 0; }
bool is_supported(std::string_view keyword) { return kSupported.count(keyword) > 0; }

// "$.properties.a", "$['$defs'].node", "$.anyOf[1]".
std::string path_key(std::string_view path, std::string_view key) {
  if (is_identifier(key)) return fmt::format("{}.{}", path, key);
  std::string quoted;
  for (char c : key) quoted += c == '\'' ? std::string("\\'") : std::string(1, c);
  return fmt::format("{}['{}']", path, quoted);
}
std::string path_index(std::string_view path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

std::string rule_hint(std::string_view s) {
  std::string out;
  for (char c : s) {
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (out.size() >= 32) break;
  }
  return out.empty() ? "x" : out;
}

// The compact JSON text of a value: keys in the given order, strings as JSON.stringify writes
// them, integral floats without a fraction (JSON.stringify(1.0) is "1").
std::string compact_json(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: {
      std::string out = "{";
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (out.size() > 1) out += ',';
        out += json_quote(it.key()) + ":" + compact_json(it.value());
      }
      return out + "}";
    }
    case Json::value_t::array: {
      std::string out = "[";
      for (const auto& e : v) out += (out.size() > 1 ? "," : "") + compact_json(e);
      return out + "]";
    }
    case Json::value_t::string:
      return json_quote(v.get_ref<const std::string&>());
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e21) {
        return fmt::format("{:.0f}", d == 0 ? 0.0 : d);
      }
      return v.dump();
    }
    default:
      return v.dump();
  }
}

std::string join_alts(const std::vector<std::string>& alts) {
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

Result<SchemaOutput> Compiler::run() {
  names_.insert("root");
  for (const auto& p : kPrimitives) names_.insert(p.name);
  ref_rules_["#"] = "root";
  rules_.emplace_back("root", "");
  RECUR_ASSIGN_OR_RETURN(std::string body, visit(root_, "$", "root", 0));
  rules_[0].second = body;
  SchemaOutput out;
  std::size_t text_bytes = 0;
  for (auto& [name, rule_body] : rules_) {
    out.gbnf += fmt::format("{} ::= {}\n", name, rule_body);
    text_bytes += rule_body.size();
  }
  for (const auto& p : kPrimitives) {
    if (used_.count(p.name)) out.gbnf += fmt::format("{} ::= {}\n", p.name, p.body);
  }
  elements_ += static_cast<std::int64_t>(text_bytes / 2);
  if (elements_ > kMaxElements) {
    return Error(StatusCode::kInvalidArgument,
                 "$: the schema's grammar is too large (about {} elements, at most {})", elements_,
                 kMaxElements);
  }
  out.ignored = std::move(ignored_);
  return out;
}

Status Compiler::error(std::string_view path, std::string_view what) {
  return Error(StatusCode::kInvalidArgument, "{}: {}", path, what);
}
// A keyword the compiler does not express: an error, or (lenient) recorded and left out.
Status Compiler::unsupported(std::string_view path, std::string_view keyword,
                             std::string_view why) {
  if (options_.lenient) {
    ignored_.push_back(fmt::format("{}: '{}'", path, keyword));
    return Status::ok();
  }
  if (!why.empty()) return error(path, why);
  return error(path, fmt::format("'{}' is not supported", keyword));
}

std::string Compiler::primitive(std::string_view name) {
  if (used_.insert(std::string(name)).second) {
    for (const auto& p : kPrimitives) {
      if (std::string_view(p.name) == name) {
        for (const char* u : p.uses) primitive(u);
      }
    }
  }
  return std::string(name);
}

std::string Compiler::fresh_name(std::string_view hint) {
  std::string name(hint);
  for (int n = 2; names_.count(name); ++n) name = fmt::format("{}-{}", hint, n);
  names_.insert(name);
  return name;
}

// A rule with this body (an existing one when the body is the same).
std::string Compiler::add_rule(std::string_view hint, const std::string& body) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  std::string name = fresh_name(hint);
  rules_.emplace_back(name, body);
  by_body_[body] = name;
  return name;
}
// A name for a body: the body itself when it is one already.
std::string Compiler::named(std::string_view hint, const std::string& body) {
  bool is_name = !body.empty() && body.find_first_not_of(
                                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789-_") == std::string::npos;
  return is_name ? body : add_rule(hint, body);
}
Result<std::string> Compiler::child(const Json& s, const std::string& path, const std::string& hint,
                                    int depth) {
  RECUR_ASSIGN_OR_RETURN(std::string body, visit(s, path, hint, depth + 1));
  return named(hint, body);
}

Result<std::string> Compiler::visit(const Json& s, const std::string& path, const std::string& hint,
                                    int depth) {
  if (depth > kMaxDepth) {
    return error(path, fmt::format("the schema nests deeper than {} levels", kMaxDepth));
  }
  if (s.is_boolean()) {
    if (s.get<bool>()) return primitive("value");
    return error(path, "the schema is false: no value matches it");
  }
  if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (kAnnotations.count(it.key()) || kSupported.count(it.key())) continue;
    RECUR_RETURN_IF_ERROR(unsupported(path, it.key()));
  }
  bool nullable = false;
  if (s.contains("nullable")) {
    if (!s["nullable"].is_boolean()) return error(path, "'nullable' must be a boolean");
    nullable = s["nullable"].get<bool>();
  }
  std::string body;
  if (s.contains("const")) {
    body = gbnf_literal(compact_json(s["const"]));
  } else if (s.contains("enum")) {
    RECUR_ASSIGN_OR_RETURN(body, enum_body(s["enum"], path));
  } else if (s.contains("$ref") || s.contains("anyOf") || s.contains("oneOf")) {
    RECUR_ASSIGN_OR_RETURN(body, combinator_body(s, path, hint, depth));
  } else if (s.contains("allOf")) {
    RECUR_ASSIGN_OR_RETURN(body, all_of(s, path, hint, depth));
  } else {
    RECUR_ASSIGN_OR_RETURN(body, typed_body(s, path, hint, depth, &nullable));
  }
  if (nullable) body = fmt::format("{} | {}", named(hint, body), primitive("null"));
  return body;
}

Result<std::string> Compiler::enum_body(const Json& values, const std::string& path) {
  if (!values.is_array() || values.empty()) {
    return error(path, "'enum' must be a non-empty array");
  }
  std::vector<std::string> alts;
  for (const auto& v : values) {
    std::string lit = gbnf_literal(compact_json(v));
    if (std::find(alts.begin(), alts.end(), lit) == alts.end()) alts.push_back(lit);
  }
  return join_alts(alts);
}

// Keywords besides `applicator` that constrain: left out with an error (or, lenient, a note).
Status Compiler::only_annotations_beside(const Json& s, const std::string& path,
                                         std::string_view applicator) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (k == applicator || k == "nullable" || kAnnotations.count(k) || !kSupported.count(k)) {
      continue;
    }
    RECUR_RETURN_IF_ERROR(
        unsupported(path, k, fmt::format("'{}' next to '{}' is not supported", k, applicator)));
  }
  return Status::ok();
}

Result<std::string> Compiler::combinator_body(const Json& s, const std::string& path,
                                              const std::string& hint, int depth) {
  const char* key = s.contains("$ref") ? "$ref" : s.contains("anyOf") ? "anyOf" : "oneOf";
  RECUR_RETURN_IF_ERROR(only_annotations_beside(s, path, key));
  if (std::string_view(key) == "$ref") return ref(s["$ref"], path, depth);
  const Json& subs = s[key];
  if (!subs.is_array() || subs.empty()) {
    return error(path, fmt::format("'{}' must be a non-empty array of schemas", key));
  }
  if (std::string_view(key) == "oneOf" && !branches_disjoint(subs, path)) {
    // A grammar cannot say "exactly one": only branches no value can match twice are exact.
    RECUR_RETURN_IF_ERROR(unsupported(path, "oneOf",
                                      "'oneOf' with branches one value may match twice is not "
                                      "supported (use anyOf, or give the branches distinct "
                                      "types or a distinct const property)"));
  }
  std::vector<std::string> alts;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(std::string alt, child(subs[i], path_index(path_key(path, key), i),
                                                  fmt::format("{}-{}", hint, i), depth));
    if (std::find(alts.begin(), alts.end(), alt) == alts.end()) alts.push_back(alt);
  }
  return join_alts(alts);
}

// Whether no value can match two of the branches: they differ in type (number and integer
// overlap), in their const / enum values, or in the const / single enum value of a property both
// require (a discriminated union). References are followed.
bool Compiler::branches_disjoint(const Json& subs, const std::string& path) {
  auto deref = [&](const Json* s) {
    for (int hops = 0; hops < 16 && s->is_object() && s->contains("$ref"); ++hops) {
      const Json& r = (*s)["$ref"];
      if (!r.is_string()) return s;
      std::string target;
      auto resolved = resolve(r.get<std::string>(), path, &target);
      if (!resolved.is_ok()) return s;
      s = *resolved;
    }
    return s;
  };
  auto type_of = [](const Json& s) -> std::string {
    auto t = s.find("type");
    return t != s.end() && t->is_string() ? t->get<std::string>() : "";
  };
  auto values = [](const Json& s) -> std::optional<Json> {
    if (auto c = s.find("const"); c != s.end()) return Json::array({*c});
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) return *e;
    return std::nullopt;
  };
  auto disjoint_values = [&](const Json& a, const Json& b) {
    auto va = values(a), vb = values(b);
    if (!va || !vb) return false;
    for (const Json& x : *va) {
      for (const Json& y : *vb) {
        if (x == y) return false;
      }
    }
    return true;
  };
  auto required = [](const Json& s, const std::string& name) {
    auto r = s.find("required");
    if (r == s.end() || !r->is_array()) return false;
    for (const Json& n : *r) {
      if (n.is_string() && n.get<std::string>() == name) return true;
    }
    return false;
  };
  auto disjoint = [&](const Json& a, const Json& b) {
    if (!a.is_object() || !b.is_object()) return false;
    const std::string ta = type_of(a), tb = type_of(b);
    const bool numbers = (ta == "integer" || ta == "number") && (tb == "integer" || tb == "number");
    if (!ta.empty() && !tb.empty() && ta != tb && !numbers) return true;
    if (disjoint_values(a, b)) return true;
    auto pa = a.find("properties");
    auto pb = b.find("properties");
    if (pa == a.end() || pb == b.end() || !pa->is_object() || !pb->is_object()) return false;
    for (const auto& [name, sa] : pa->items()) {
      auto sb = pb->find(name);
      if (sb == pb->end() || !required(a, name) || !required(b, name)) continue;
      if (disjoint_values(*deref(&sa), *deref(&*sb))) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < subs.size(); ++i) {
    for (std::size_t j = i + 1; j < subs.size(); ++j) {
      if (!disjoint(*deref(&subs[i]), *deref(&subs[j]))) return false;
    }
  }
  return true;
}

// ---- $ref ----

// The schema at a local JSON pointer ("#", "#/$defs/a~1b"), and its path for messages.
Result<const Json*> Compiler::resolve(const std::string& ref, const std::string& path,
                                      std::string* target_path) {
  if (ref.empty() || ref[0] != '#') {
    return error(path, fmt::format("'$ref' \"{}\" is not a local reference (\"#...\")", ref));
  }
  const Json* at = &root_;
  *target_path = "$";
  std::size_t i = 1;
  if (i < ref.size() && ref[i] != '/') {
    return error(path, fmt::format("'$ref' \"{}\" is not a JSON pointer", ref));
  }
  while (i < ref.size()) {
    std::size_t end = ref.find('/', i + 1);
    if (end == std::string::npos) end = ref.size();
    std::string token;
    for (std::size_t k = i + 1; k < end; ++k) {
      if (ref[k] == '~' && k + 1 < end && (ref[k + 1] == '0' || ref[k + 1] == '1')) {
        token += ref[++k] == '0' ? '~' : '/';
      } else {
        token += ref[k];
      }
    }
    i = end;
    if (at->is_object() && at->contains(token)) {
      at = &(*at)[token];
      *target_path = path_key(*target_path, token);
    } else if (at->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               std::stoul(token) < at->size()) {
      *target_path = path_index(*target_path, std::stoul(token));
      at = &(*at)[std::stoul(token)];
    } else {
      return error(path, fmt::format("'$ref' \"{}\" does not resolve", ref));
    }
  }
  return at;
}

Result<std::string> Compiler::ref(const Json& value, const std::string& path, int depth) {
  if (!value.is_string()) return error(path, "'$ref' must be a string");
  std::string ref = value.get<std::string>();
  if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) {
    if (ref == "#" && is_pure_ref(root_)) {
      return error(path, "'$ref' only refers to itself: no value can be built");
    }
    return it->second;
  }
  // A chain of schemas that are only a $ref: a cycle in it has no instance.
  std::set<std::string> seen = {ref};
  std::string target_path;
  RECUR_ASSIGN_OR_RETURN(const Json* target, resolve(ref, path, &target_path));
  for (const Json* t = target; is_pure_ref(*t);) {
    std::string next = (*t)["$ref"].get<std::string>();
    if (!seen.insert(next).second) {
      return error(path,
                   fmt::format("'$ref' \"{}\" only refers to itself: no value can be built", ref));
    }
    std::string ignored_path;
    RECUR_ASSIGN_OR_RETURN(t, resolve(next, target_path, &ignored_path));
  }
  std::size_t slash = ref.rfind('/');
  std::string name = fresh_name(
      "ref-" + rule_hint(slash == std::string::npos ? std::string("root") : ref.substr(slash + 1)));
  ref_rules_[ref] = name;
  std::size_t slot = rules_.size();
  rules_.emplace_back(name, "");
  RECUR_ASSIGN_OR_RETURN(std::string body, visit(*target, target_path, name, depth + 1));
  rules_[slot].second = body;
  return name;
}

}  // namespace recur::grammar::schema_detail

namespace recur::grammar {

using schema_detail::Json;
using schema_detail::kPrimitives;

Result<SchemaOutput> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                         const SchemaOptions& options) {
  return schema_detail::Compiler(schema, options).run();
}

Result<SchemaOutput> json_schema_text_to_gbnf(std::string_view schema_text,
                                              const SchemaOptions& options) {
  Json schema = Json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    return Error(StatusCode::kInvalidArgument, "$: the schema is not valid JSON");
  }
  return json_schema_to_gbnf(schema, options);
}

std::string json_object_gbnf() {
  std::string out = "root ::= object\n";
  for (const auto& p : kPrimitives) {
    if (std::string_view(p.name) != "integer") out += fmt::format("{} ::= {}\n", p.name, p.body);
  }
  return out;
}

}  // namespace recur::grammar
