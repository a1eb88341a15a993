// The tree-walking interpreter behind Template::render. Internal to template/: statements and
// scopes (interpreter.cc), expressions and operators (eval.cc), filters and tests (filters.cc),
// Python methods and globals (methods.cc). One Interpreter renders one template once; it is not
// thread-safe and not reused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"
#include "template/template.h"
#include "template/value.h"

namespace recur::tmpl {

class Interpreter {
 public:
  Interpreter(const Source& source, const RenderOptions& options);
  // Empties every namespace of the render: a namespace holding itself would otherwise leak.
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  // Remembers a namespace created by this render (for the destructor).
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }

  Result<std::string> render(const Body& body, const Value& context);

  // Builds the located error every failure of a render reports.
  Status error(std::uint32_t offset, std::string_view message) const;
  // Re-locates an error raised by a builtin that did not know where it was called.
  Status locate(const Status& status, std::uint32_t offset) const;
  Result<Value> call(const Value& fn, CallArgs& args, std::uint32_t offset);
  Result<Value> apply_filter(std::string_view name, Value operand, CallArgs& args,
                             std::uint32_t offset);
  Result<bool> apply_test(std::string_view name, const Value& operand, CallArgs& args,
                          std::uint32_t offset);
  const RenderOptions& options() const { return options_; }
  // Counts loop iterations (and other repeated work) against the limit.
  Status count_step(std::uint32_t offset);

 private:
  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;
    Value* find(std::string_view name);
    void set(std::string_view name, Value v);
  };
  enum class Flow : std::uint8_t { kNormal, kBreak, kContinue };

  // Statements (interpreter.cc).
  Result<Flow> exec(const Body& body, std::string& out);
  Result<Flow> exec_stmt(const Stmt& s, std::string& out);
  Result<Flow> exec_if(const Stmt& s, std::string& out);
  Result<Flow> exec_for(const Stmt& s, std::string& out);
  Status exec_set(const Stmt& s, std::string& out);
  Status exec_call_block(const Stmt& s, std::string& out);
  Status exec_with(const Stmt& s, std::string& out);
  Status assign(const std::vector<Target>& targets, const Value& value, std::uint32_t offset);
  Value make_macro(const Stmt& s, std::shared_ptr<Scope> closure);
  // A macro or a call block's caller: what a call needs of it.
  struct MacroRef {
    std::string_view name;
    const std::vector<Param>& params;
    const Body& body;
    std::uint32_t offset;
  };
  Result<Value> call_macro(const MacroRef& m, const std::shared_ptr<Scope>& closure,
                           CallArgs& args);
  Status write(std::string& out, std::string_view text, std::uint32_t offset);
  // Renders `body` into a string in a fresh child scope (block set, filter, caller).
  Result<std::string> render_capture(const Body& body, std::uint32_t offset);

  // Expressions (eval.cc).
  Result<Value> eval(const Expr& e);
  Result<Value> eval_call(const Expr& e);
  Result<Value> eval_compare(const Expr& e);
  Result<Value> eval_binary(const Expr& e);
  Result<Value> eval_slice(const Expr& e);
  Status eval_args(const Expr& e, std::size_t first, CallArgs& args);
  Value lookup(std::string_view name);

  const Source& source_;
  const RenderOptions& options_;
  std::shared_ptr<Scope> scope_;
  std::uint64_t steps_ = 0;
  int depth_ = 0;
  std::size_t output_bytes_ = 0;
  std::vector<Value> namespaces_;
};

// Attribute and item lookup with Jinja2's rules (eval.cc): obj.name tries the attribute (methods
// of str/dict/list) then the item; obj[key] tries the item, then the attribute.
Value get_attr(const Value& obj, std::string_view name);
Value get_item(const Value& obj, const Value& key);
// Python binary operators (eval.cc); `op` is "+", "-", "*", "/", "//", "%", "**", "~".
Result<Value> binary_op(std::string_view op, const Value& a, const Value& b);
// Python <, for sorting and comparisons (eval.cc). Errors when the types do not order.
Result<bool> less_than(const Value& a, const Value& b);
// Python's "x in container" (eval.cc).
Result<bool> contains(const Value& container, const Value& item);
// The items a for loop visits: list items, dict keys, string characters (eval.cc).
Result<std::vector<Value>> iterate(const Value& v);

// A method of a str, dict or list called as obj.name(args) (methods.cc). nullopt-like:
// returns false in `found` when there is no such method.
Result<Value> call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args,
                          bool& found);
bool has_method(const Value& obj, std::string_view name);
// The globals every render sees: range, namespace, dict, raise_exception, strftime_now, ...
void add_globals(std::vector<std::pair<std::string, Value>>& vars);

// json.dumps's options as Hugging Face's tojson filter passes them (defaults: HF's).
struct JsonOptions {
  bool ensure_ascii = false;
  bool pretty = false;  // indent given: newlines, `indent` per level, "," item separator
  std::string indent;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
// json.dumps(x, ...) as Hugging Face's tojson calls it (json.cc).
Result<std::string> to_json(const Value& v, const JsonOptions& options);

// Argument helpers for builtins: the i-th positional or the named keyword, else `fallback`.
Value arg(CallArgs& args, std::size_t index, std::string_view keyword, Value fallback = {});

}  // namespace recur::tmpl
