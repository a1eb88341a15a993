// The dynamic value a Jinja template computes with, modelled on the Python objects Jinja2 sees:
// undefined, None, bool, int, float, str, list, dict (insertion-ordered), callables. Lists and
// dicts have reference semantics (copies share), as in Python. Not for anything outside template/
// and its callers' context building.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace recur::tmpl {

class Value;
class Interpreter;

// Positional and keyword arguments of one call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using NativeFn = std::function<Result<Value>(Interpreter&, CallArgs&)>;

enum class Kind : std::uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kDict,
  kCallable,
};

class Value {
 public:
  using List = std::vector<Value>;
  struct Dict;
  struct Callable {
    std::string name;
    NativeFn fn;
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);                                         // NOLINT(google-explicit-constructor)
  Value(std::int64_t i);                                 // NOLINT
  Value(int i) : Value(static_cast<std::int64_t>(i)) {}  // NOLINT
  Value(double f);                                       // NOLINT
  Value(std::string s);                                  // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}   // NOLINT
  Value(const char* s) : Value(std::string(s)) {}        // NOLINT
  static Value list(List items = {});
  // A Python tuple: a list that prints as (a, b) and spreads over "%" format arguments.
  static Value tuple(List items);
  static Value dict();
  static Value namespace_object();
  static Value callable(std::string name, NativeFn fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const;
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  std::int64_t as_int() const { return i_; }
  double as_float() const { return f_; }
  // Numbers as double (bool and int widen).
  double to_double() const;
  const std::string& as_string() const { return s_; }
  // For undefined: what was looked up, for the error message.
  const std::string& undefined_hint() const { return s_; }
  List& as_list() const { return *list_; }
  Dict& as_dict() const { return *dict_; }
  const Callable& as_callable() const { return *fn_; }

  // Container nesting: 0 for scalars, 1 + the deepest item for lists and dicts. Bounded by the
  // interpreter (kMaxValueDepth) so destroying or printing a value cannot exhaust the stack.
  std::uint32_t depth() const;

  // Python truthiness.
  bool truthy() const;
  // str(x) as Jinja prints it: undefined prints "", None "None", floats as Python's repr.
  std::string to_str() const;
  // repr(x): strings quoted, for printing lists and dicts.
  std::string repr() const;
  // repr() that prints "..." below max_depth levels (self-referencing namespaces).
  std::string repr(int max_depth) const;
  // Jinja's type name in error messages ("dict object", "str object").
  std::string type_name() const;

  // Python ==.
  friend bool operator==(const Value& a, const Value& b);

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  std::uint32_t depth_ = 0;  // lists only (immutable); dicts keep theirs in Dict::depth
  std::int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

// An insertion-ordered dict (JSON objects, namespaces, kwargs, dict literals). Keys are strings
// almost always; dict literals may use ints (looked up by Python equality).
struct Value::Dict {
  std::vector<std::pair<Value, Value>> items;
  bool is_namespace = false;
  std::uint32_t depth = 1;  // never decreases; see Value::depth

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  const Value* find_key(const Value& key) const;
  void set(std::string_view key, Value v);
  void set_key(const Value& key, Value v);
  bool erase(std::string_view key);
};

// Deepest container nesting a template may build.
inline constexpr std::uint32_t kMaxValueDepth = 512;

// Python's repr() of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string python_float_repr(double f);
// Python's repr() of a str.
std::string python_str_repr(std::string_view s);

}  // namespace recur::tmpl
