// The JSON Schema compiler's state, shared by json_schema.cc (rules, keywords, $ref, combinators)
// and json_schema_types.cc (objects, arrays, strings, numbers, allOf). Not a public header.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/json_schema.h"
#include "util/status.h"

namespace recur::grammar::schema_detail {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxDepth = 64;
// Longest property name of an object that also allows other properties: the other keys' rule
// nests a group per character of the names (grammar.h's kMaxGroupDepth bounds the parser).
inline constexpr std::size_t kMaxExcludedNameChars = 256;

bool is_annotation(std::string_view keyword);
bool is_supported(std::string_view keyword);
std::string path_key(std::string_view path, std::string_view key);  // "$.a", "$['$defs']"
std::string path_index(std::string_view path, std::size_t i);       // "$.anyOf[1]"
std::string rule_hint(std::string_view s);                          // [a-zA-Z0-9-] only
std::string compact_json(const Json& v);  // JSON.stringify's text, keys in the given order
std::string join_alts(const std::vector<std::string>& alts);  // "a | b"

// One compilation: thread-compatible, used once.
class Compiler {
 public:
  Compiler(const Json& root, const SchemaOptions& options) : root_(root), options_(options) {}
  Result<SchemaOutput> run();

 private:
  static Status error(std::string_view path, std::string_view what);
  Status unsupported(std::string_view path, std::string_view keyword, std::string_view why = "");

  std::string primitive(std::string_view name);  // a shared rule, emitted once used
  std::string fresh_name(std::string_view hint);
  std::string add_rule(std::string_view hint, const std::string& body);
  std::string named(std::string_view hint, const std::string& body);

  // The body of a rule for schema `s`; `child` names it.
  Result<std::string> visit(const Json& s, const std::string& path, const std::string& hint,
                            int depth);
  Result<std::string> child(const Json& s, const std::string& path, const std::string& hint,
                            int depth);
  Result<std::string> enum_body(const Json& values, const std::string& path);
  Status only_annotations_beside(const Json& s, const std::string& path,
                                 std::string_view applicator);
  Result<std::string> combinator_body(const Json& s, const std::string& path,
                                      const std::string& hint, int depth);
  bool branches_disjoint(const Json& subs, const std::string& path);
  Result<const Json*> resolve(const std::string& ref, const std::string& path,
                              std::string* target_path);
  Result<std::string> ref(const Json& value, const std::string& path, int depth);

  // json_schema_types.cc
  Result<std::string> all_of(const Json& s, const std::string& path, const std::string& hint,
                             int depth);
  Result<std::string> typed_body(const Json& s, const std::string& path, const std::string& hint,
                                 int depth, bool* nullable);
  Result<std::string> string_body(const Json& s, const std::string& path);
  Result<std::string> integer_body(const Json& s, const std::string& path);
  Result<std::string> number_body(const Json& s, const std::string& path);
  Result<std::string> object_body(const Json& s, const std::string& path, const std::string& hint,
                                  int depth);
  Result<std::string> array_body(const Json& s, const std::string& path, const std::string& hint,
                                 int depth);
  std::string not_in_names(const std::vector<std::string>& names);
  Result<std::string> repeat(const std::string& item, std::int64_t lo,
                             std::optional<std::int64_t> hi, const std::string& path,
                             std::string_view keyword);
  Result<std::optional<std::int64_t>> count(const Json& s, const std::string& path,
                                            const char* keyword);

  const Json& root_;
  SchemaOptions options_;
  std::vector<std::pair<std::string, std::string>> rules_;  // in creation order, root first
  std::map<std::string, std::string> by_body_;
  std::set<std::string> names_;
  std::set<std::string, std::less<>> used_;  // primitives
  std::map<std::string, std::string> ref_rules_;
  std::vector<std::string> ignored_;
  std::int64_t elements_ = 0;
};

}  // namespace recur::grammar::schema_detail
