// Statements, scopes and limits of the interpreter, and Template's entry points. Scoping follows
// Jinja2: each for-loop iteration, macro call and with block gets a fresh child scope (a `set`
// there does not leak out); if blocks do not; namespaces are the way to carry state out of loops.
#include "template/interpreter.h"

#include "template/parser.h"
#include "util/check.h"

namespace recur::tmpl {

Value* Interpreter::Scope::find(std::string_view name) {
  for (auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}
void Interpreter::Scope::set(std::string_view name, Value v) {
  if (Value* existing = find(name)) {
    *existing = std::move(v);
  } else {
    vars.emplace_back(std::string(name), std::move(v));
  }
}

Interpreter::Interpreter(const Source& source, const RenderOptions& options)
    : source_(source), options_(options) {}

Interpreter::~Interpreter() {
  for (Value& ns : namespaces_) ns.as_dict().items.clear();
}

Status Interpreter::error(std::uint32_t offset, std::string_view message) const {
  SourcePos p = source_.position(offset);
  return Error(StatusCode::kInvalidArgument, "template error at line {}, column {}: {}", p.line,
               p.column, message);
}

Status Interpreter::locate(const Status& status, std::uint32_t offset) const {
  if (status.message().starts_with("template ")) return status;  // already located
  SourcePos p = source_.position(offset);
  return Status(status.code(), fmt::format("template error at line {}, column {}: {}", p.line,
                                           p.column, status.message()));
}

Status Interpreter::count_step(std::uint32_t offset) {
  if (++steps_ > options_.limits.max_steps) {
    return error(offset, fmt::format("template exceeded the limit of {} loop iterations and calls",
                                     options_.limits.max_steps));
  }
  return Status::ok();
}

Status Interpreter::write(std::string& out, std::string_view text, std::uint32_t offset) {
  output_bytes_ += text.size();
  if (output_bytes_ > options_.limits.max_output_bytes) {
    return error(offset, fmt::format("template output exceeded the limit of {} bytes",
                                     options_.limits.max_output_bytes));
  }
  out += text;
  return Status::ok();
}

Result<std::string> Interpreter::render(const Body& body, const Value& context) {
  auto globals = std::make_shared<Scope>();
  add_globals(globals->vars);
  scope_ = std::make_shared<Scope>();
  scope_->parent = globals;
  if (context.is_dict()) {
    for (const auto& [k, v] : context.as_dict().items) scope_->set(k.to_str(), v);
  }
  std::string out;
  RECUR_ASSIGN_OR_RETURN(Flow flow, exec(body, out));
  (void)flow;  // break/continue outside loops are rejected by Jinja2's parser; ignore here
  return out;
}

Result<Interpreter::Flow> Interpreter::exec(const Body& body, std::string& out) {
  if (++depth_ > options_.limits.max_depth) {
    --depth_;
    return error(body.empty() ? 0 : body.front()->offset, "template nesting too deep");
  }
  Flow flow = Flow::kNormal;
  for (const auto& s : body) {
    auto r = exec_stmt(*s, out);
    if (!r.is_ok()) {
      --depth_;
      return r.status();
    }
    flow = *r;
    if (flow != Flow::kNormal) break;
  }
  --depth_;
  return flow;
}

Result<Interpreter::Flow> Interpreter::exec_stmt(const Stmt& s, std::string& out) {
  switch (s.kind) {
    case StmtKind::kData:
      RECUR_RETURN_IF_ERROR(write(out, s.text, s.offset));
      return Flow::kNormal;
    case StmtKind::kOutput: {
      RECUR_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
      RECUR_RETURN_IF_ERROR(write(out, v.to_str(), s.offset));
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      return exec_if(s, out);
    case StmtKind::kFor:
      return exec_for(s, out);
    case StmtKind::kSet:
    case StmtKind::kSetBlock:
      RECUR_RETURN_IF_ERROR(exec_set(s, out));
      return Flow::kNormal;
    case StmtKind::kMacro:
      scope_->set(s.text, make_macro(s, scope_));
      return Flow::kNormal;
    case StmtKind::kCallBlock:
      RECUR_RETURN_IF_ERROR(exec_call_block(s, out));
      return Flow::kNormal;
    case StmtKind::kFilterBlock: {
      RECUR_ASSIGN_OR_RETURN(std::string text, render_capture(s.body, s.offset));
      // The filter chain's innermost operand is null: feed the captured text in its place.
      const Expr* inner = s.filter.get();
      std::vector<const Expr*> chain;
      for (; inner; inner = inner->args[0].get()) chain.push_back(inner);
      Value v(std::move(text));
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs args;
        RECUR_RETURN_IF_ERROR(eval_args(**it, 1, args));
        RECUR_ASSIGN_OR_RETURN(v, apply_filter((*it)->name, std::move(v), args, (*it)->offset));
      }
      RECUR_RETURN_IF_ERROR(write(out, v.to_str(), s.offset));
      return Flow::kNormal;
    }
    case StmtKind::kWith:
      RECUR_RETURN_IF_ERROR(exec_with(s, out));
      return Flow::kNormal;
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec_if(const Stmt& s, std::string& out) {
  for (std::size_t i = 0; i < s.conditions.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(Value cond, eval(*s.conditions[i]));
    if (cond.truthy()) return exec(s.bodies[i], out);
  }
  return exec(s.else_body, out);
}

namespace {
Value make_loop(const std::vector<Value>& items, std::size_t i) {
  Value loop = Value::dict();
  auto& d = loop.as_dict();
  d.items.reserve(13);
  auto n = static_cast<std::int64_t>(items.size());
  auto idx = static_cast<std::int64_t>(i);
  d.set("index0", Value(idx));
  d.set("index", Value(idx + 1));
  d.set("revindex", Value(n - idx));
  d.set("revindex0", Value(n - idx - 1));
  d.set("first", Value(i == 0));
  d.set("last", Value(idx == n - 1));
  d.set("length", Value(n));
  d.set("depth", Value(1));
  d.set("depth0", Value(0));
  if (i > 0) d.set("previtem", items[i - 1]);
  if (idx + 1 < n) d.set("nextitem", items[i + 1]);
  d.set("cycle", Value::callable("cycle", [idx](Interpreter&, CallArgs& args) -> Result<Value> {
          if (args.positional.empty()) {
            return Error(StatusCode::kInvalidArgument, "no items for cycling given");
          }
          return args.positional[static_cast<std::size_t>(idx) % args.positional.size()];
        }));
  return loop;
}
}  // namespace

Result<Interpreter::Flow> Interpreter::exec_for(const Stmt& s, std::string& out) {
  RECUR_ASSIGN_OR_RETURN(Value iterable, eval(*s.expr));
  auto items_r = iterate(iterable);
  if (!items_r.is_ok()) return locate(items_r.status(), s.expr->offset);
  std::vector<Value> items = std::move(items_r).value();
  auto outer = scope_;
  if (s.cond) {  // the inline filter runs before loop.* is computed, as in Jinja2
    std::vector<Value> kept;
    for (const Value& item : items) {
      RECUR_RETURN_IF_ERROR(count_step(s.offset));
      scope_ = std::make_shared<Scope>();
      scope_->parent = outer;
      auto st = assign(s.targets, item, s.offset);
      auto c = st.is_ok() ? eval(*s.cond) : Result<Value>(st);
      scope_ = outer;
      if (!c.is_ok()) return c.status();
      if (c->truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    RECUR_RETURN_IF_ERROR(count_step(s.offset));
    scope_ = std::make_shared<Scope>();
    scope_->parent = outer;
    scope_->set("loop", make_loop(items, i));
    Status st = assign(s.targets, items[i], s.offset);
    auto flow = st.is_ok() ? exec(s.body, out) : Result<Flow>(st);
    scope_ = outer;
    if (!flow.is_ok()) return flow.status();
    if (*flow == Flow::kBreak) break;
  }
  if (items.empty()) return exec(s.else_body, out);
  return Flow::kNormal;
}

Status Interpreter::assign(const std::vector<Target>& targets, const Value& value,
                           std::uint32_t offset) {
  // Values only grow across statements through assignments: bounding depth here bounds it all.
  if (value.depth() >= kMaxValueDepth) {
    return error(offset, fmt::format("value nested deeper than {} levels", kMaxValueDepth));
  }
  if (targets.size() == 1 && targets[0].attr.empty()) {
    scope_->set(targets[0].name, value);
    return Status::ok();
  }
  if (targets.size() == 1) {
    Value ns = lookup(targets[0].name);
    if (!ns.is_namespace()) return error(offset, "cannot assign attribute on non-namespace object");
    ns.as_dict().set(targets[0].attr, value);
    return Status::ok();
  }
  auto items_r = iterate(value);
  if (!items_r.is_ok()) return locate(items_r.status(), offset);
  if (items_r->size() != targets.size()) {
    return error(offset, fmt::format("cannot unpack {} values into {} names", items_r->size(),
                                     targets.size()));
  }
  for (std::size_t i = 0; i < targets.size(); ++i) scope_->set(targets[i].name, (*items_r)[i]);
  return Status::ok();
}

Status Interpreter::exec_set(const Stmt& s, std::string&) {
  if (s.kind == StmtKind::kSet) {
    RECUR_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
    return assign(s.targets, v, s.offset);
  }
  RECUR_ASSIGN_OR_RETURN(std::string text, render_capture(s.body, s.offset));
  Value v(std::move(text));
  if (s.filter) {
    std::vector<const Expr*> chain;
    for (const Expr* f = s.filter.get(); f; f = f->args[0].get()) chain.push_back(f);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      CallArgs args;
      RECUR_RETURN_IF_ERROR(eval_args(**it, 1, args));
      RECUR_ASSIGN_OR_RETURN(v, apply_filter((*it)->name, std::move(v), args, (*it)->offset));
    }
  }
  return assign(s.targets, v, s.offset);
}

Result<std::string> Interpreter::render_capture(const Body& body, std::uint32_t) {
  auto outer = scope_;
  scope_ = std::make_shared<Scope>();
  scope_->parent = outer;
  std::string text;
  auto flow = exec(body, text);
  scope_ = outer;
  if (!flow.is_ok()) return flow.status();
  return text;
}

// The macro lives in the scope it closes over: holding that scope weakly avoids a reference
// cycle (a leak per render). A macro called after its scope ended (smuggled out of a loop
// through a namespace) is an error instead.
Value Interpreter::make_macro(const Stmt& s, std::shared_ptr<Scope> closure) {
  const Stmt* stmt = &s;
  std::weak_ptr<Scope> weak = closure;
  return Value::callable(s.text, [stmt, weak](Interpreter& in, CallArgs& args) -> Result<Value> {
    std::shared_ptr<Scope> scope = weak.lock();
    if (!scope) {
      return in.error(stmt->offset, fmt::format("macro '{}' outlived its scope", stmt->text));
    }
    return in.call_macro({stmt->text, stmt->params, stmt->body, stmt->offset}, scope, args);
  });
}

Result<Value> Interpreter::call_macro(const MacroRef& s, const std::shared_ptr<Scope>& closure,
                                      CallArgs& args) {
  if (args.positional.size() > s.params.size()) {
    return error(s.offset, fmt::format("macro '{}' takes not more than {} argument(s)", s.name,
                                       s.params.size()));
  }
  auto saved = scope_;
  scope_ = std::make_shared<Scope>();
  scope_->parent = closure;
  Status st;
  for (std::size_t i = 0; i < s.params.size() && st.is_ok(); ++i) {
    const Param& p = s.params[i];
    if (i < args.positional.size()) {
      scope_->set(p.name, args.positional[i]);
      continue;
    }
    auto kw = std::find_if(args.keywords.begin(), args.keywords.end(),
                           [&](const auto& k) { return k.first == p.name; });
    if (kw != args.keywords.end()) {
      scope_->set(p.name, kw->second);
    } else if (p.default_value) {
      auto v = eval(*p.default_value);
      if (v.is_ok()) scope_->set(p.name, *v);
      st = v.status();
    } else {
      scope_->set(p.name, Value::undefined(fmt::format("parameter '{}' was not provided", p.name)));
    }
  }
  for (const auto& [k, v] : args.keywords) {
    if (!st.is_ok()) break;
    // A named copy of the binding: clang before 16 cannot capture structured bindings.
    const std::string& key = k;
    bool known = key == "caller" || std::any_of(s.params.begin(), s.params.end(),
                                                [&](const Param& p) { return p.name == key; });
    if (!known)
      st = error(s.offset, fmt::format("macro '{}' takes no keyword argument '{}'", s.name, k));
    if (k == "caller") scope_->set("caller", v);
  }
  std::string out;
  Result<Flow> flow = st.is_ok() ? exec(s.body, out) : Result<Flow>(st);
  scope_ = saved;
  if (!flow.is_ok()) return flow.status();
  return Value(std::move(out));
}

Status Interpreter::exec_call_block(const Stmt& s, std::string& out) {
  const Stmt* stmt = &s;
  auto closure = scope_;
  Value caller = Value::callable("caller", [stmt, closure](Interpreter& in, CallArgs& args) {
    return in.call_macro({"caller", stmt->params, stmt->body, stmt->offset}, closure, args);
  });
  const Expr& call = *s.expr;
  RECUR_ASSIGN_OR_RETURN(Value fn, eval(*call.args[0]));
  CallArgs args;
  RECUR_RETURN_IF_ERROR(eval_args(call, 1, args));
  args.keywords.emplace_back("caller", caller);
  RECUR_ASSIGN_OR_RETURN(Value v, this->call(fn, args, call.offset));
  return write(out, v.to_str(), s.offset);
}

Status Interpreter::exec_with(const Stmt& s, std::string& out) {
  std::vector<Value> values;
  for (const auto& e : s.values) {
    RECUR_ASSIGN_OR_RETURN(Value v, eval(*e));
    values.push_back(std::move(v));
  }
  auto outer = scope_;
  scope_ = std::make_shared<Scope>();
  scope_->parent = outer;
  for (std::size_t i = 0; i < values.size(); ++i) scope_->set(s.targets[i].name, values[i]);
  auto flow = exec(s.body, out);
  scope_ = outer;
  return flow.is_ok() ? Status::ok() : flow.status();
}

Value Interpreter::lookup(std::string_view name) {
  for (Scope* s = scope_.get(); s; s = s->parent.get()) {
    if (Value* v = s->find(name)) return *v;
  }
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

struct Template::Parsed {
  explicit Parsed(std::string_view raw) : source(raw) {}
  Source source;
  Body body;
};

Result<Template> Template::parse(std::string_view source) {
  auto parsed = std::make_shared<Parsed>(source);
  RECUR_ASSIGN_OR_RETURN(parsed->body, parse_template(parsed->source));
  Template t;
  t.parsed_ = std::move(parsed);
  return t;
}

Result<std::string> Template::render(const Value& context, const RenderOptions& options) const {
  RECUR_CHECK(parsed_ != nullptr);
  Interpreter in(parsed_->source, options);
  return in.render(parsed_->body, context);
}

}  // namespace recur::tmpl
