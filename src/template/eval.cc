// Expression evaluation with Python's operator semantics and Jinja2's lookup rules: attribute
// access on dicts falls back to keys, missing keys and names are Undefined (an error only when
// used, e.g. an attribute of it), and `and`/`or` return operands as Python does.
#include <cmath>

#include "template/interpreter.h"
#include "template/text.h"

namespace recur::tmpl {
namespace {

Status type_error(std::string_view message) {
  return Status(StatusCode::kInvalidArgument, std::string(message));
}

Status undefined_error(const Value& v) {
  return type_error(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

Value bound_method(const Value& obj, std::string name) {
  return Value::callable(name, [obj, name](Interpreter& in, CallArgs& args) -> Result<Value> {
    bool found = false;
    return call_method(in, obj, name, args, found);
  });
}

// Python's slice.indices for a sequence of `len` items.
void slice_indices(std::int64_t len, const Value& start, const Value& stop, std::int64_t step,
                   std::int64_t& b, std::int64_t& e) {
  auto clamp = [&](const Value& v, std::int64_t dflt) {
    if (v.is_undefined() || v.is_none()) return dflt;
    std::int64_t i = v.as_int();
    if (i < 0) i += len;
    if (step > 0) return std::clamp<std::int64_t>(i, 0, len);
    return std::clamp<std::int64_t>(i, -1, len - 1);
  };
  b = clamp(start, step > 0 ? 0 : len - 1);
  e = clamp(stop, step > 0 ? len : -1);
}

bool overflowed(std::int64_t& out, std::string_view op, std::int64_t a, std::int64_t b) {
  if (op == "+") return __builtin_add_overflow(a, b, &out);
  if (op == "-") return __builtin_sub_overflow(a, b, &out);
  return __builtin_mul_overflow(a, b, &out);
}

Result<Value> int_pow(std::int64_t base, std::int64_t exp) {
  std::int64_t r = 1;
  for (std::int64_t i = 0; i < exp; ++i) {
    if (__builtin_mul_overflow(r, base, &r)) {
      return type_error("integer result too large");
    }
    if (r == 0 || r == 1) break;
  }
  return Value(r);
}

Result<Value> numeric_op(std::string_view op, const Value& a, const Value& b) {
  bool floats = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.to_double() == 0) return type_error("division by zero");
    return Value(a.to_double() / b.to_double());
  }
  if (op == "//" || op == "%") {
    if (b.to_double() == 0) return type_error("integer division or modulo by zero");
    if (floats) {
      double q = std::floor(a.to_double() / b.to_double());
      return op == "//" ? Value(q) : Value(a.to_double() - q * b.to_double());
    }
    std::int64_t x = a.as_int(), y = b.as_int();
    std::int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      --q;
      r += y;
    }
    return op == "//" ? Value(q) : Value(r);
  }
  if (op == "**") {
    if (!floats && b.as_int() >= 0) return int_pow(a.as_int(), b.as_int());
    return Value(std::pow(a.to_double(), b.to_double()));
  }
  if (floats) {
    double x = a.to_double(), y = b.to_double();
    return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }
  std::int64_t out = 0;
  if (overflowed(out, op, a.as_int(), b.as_int())) return type_error("integer overflow");
  return Value(out);
}

Result<Value> repeat(const Value& seq, const Value& count) {
  std::int64_t n = std::max<std::int64_t>(0, count.as_int());
  if (seq.is_string()) {
    if (static_cast<double>(seq.as_string().size()) * static_cast<double>(n) > 1e8) {
      return type_error("string repetition too large");
    }
    std::string out;
    for (std::int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  if (static_cast<double>(seq.as_list().size()) * static_cast<double>(n) > 1e7) {
    return type_error("list repetition too large");
  }
  Value::List out;
  for (std::int64_t i = 0; i < n; ++i) {
    out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  }
  return Value::list(std::move(out));
}

Result<Value> percent_format(const Value& fmt_value, const Value& args);

}  // namespace

Result<Value> binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_str() + b.to_str());
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) return numeric_op(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      Value::List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out));
    }
    if (a.is_string() || a.is_list()) {
      return type_error(fmt::format("can only concatenate {} (not \"{}\") to {}", a.type_name(),
                                    b.type_name(), a.type_name()));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a);
  }
  if (op == "%" && a.is_string()) return percent_format(a, b);
  return type_error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                a.type_name(), b.type_name()));
}

Result<bool> less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i] == y[i]) continue;
      return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  return type_error(fmt::format("'<' not supported between instances of '{}' and '{}'",
                                a.type_name(), b.type_name()));
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        return type_error(
            fmt::format("'in <string>' requires string as left operand, not {}", item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
      for (const Value& v : container.as_list()) {
        if (v == item) return true;
      }
      return false;
    case Kind::kDict:
      return container.as_dict().find_key(item) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      return type_error(
          fmt::format("argument of type '{}' is not iterable", container.type_name()));
  }
}

Result<std::vector<Value>> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kList:
      return v.as_list();
    case Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, _] : v.as_dict().items) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(v.as_string())) {
        std::string s;
        append_text_code_point(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    case Kind::kUndefined:
      return std::vector<Value>{};
    default:
      return type_error(fmt::format("'{}' object is not iterable", v.type_name()));
  }
}

Value get_attr(const Value& obj, std::string_view name) {
  if (obj.is_dict()) {
    if (!obj.is_namespace() && has_method(obj, name)) return bound_method(obj, std::string(name));
    if (const Value* v = obj.as_dict().find(name)) return *v;
  } else if (has_method(obj, name)) {
    return bound_method(obj, std::string(name));
  }
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find_key(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t i = key.as_int();
    if (obj.is_list()) {
      auto n = static_cast<std::int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.as_list()[static_cast<std::size_t>(i)];
    } else {
      std::vector<char32_t> cps = decode_utf8(obj.as_string());
      auto n = static_cast<std::int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(encode_utf8(cps, i, i + 1));
    }
    return Value::undefined(
        fmt::format("'{} object' has no element {}", obj.type_name(), key.as_int()));
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(
      fmt::format("'{} object' has no element {}", obj.type_name(), key.repr()));
}

Result<Value> Interpreter::eval(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName:
      return lookup(e.name);
    case ExprKind::kGetAttr:
    case ExprKind::kGetItem: {
      RECUR_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      if (obj.is_undefined()) return error(e.offset, undefined_error(obj).message());
      if (e.kind == ExprKind::kGetAttr) return get_attr(obj, e.name);
      RECUR_ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
      return get_item(obj, key);
    }
    case ExprKind::kSlice:
      return eval_slice(e);
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter:
    case ExprKind::kTest: {
      RECUR_ASSIGN_OR_RETURN(Value operand, eval(*e.args[0]));
      CallArgs args;
      RECUR_RETURN_IF_ERROR(eval_args(e, 1, args));
      if (e.kind == ExprKind::kFilter)
        return apply_filter(e.name, std::move(operand), args, e.offset);
      RECUR_ASSIGN_OR_RETURN(bool ok, apply_test(e.name, operand, args, e.offset));
      return Value(ok != e.negated);
    }
    case ExprKind::kNot: {
      RECUR_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
      return Value(!v.truthy());
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      RECUR_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
      if (!v.is_number()) {
        return error(e.offset, fmt::format("bad operand type for unary {}: '{}'",
                                           e.kind == ExprKind::kNeg ? '-' : '+', v.type_name()));
      }
      if (e.kind == ExprKind::kPos) return v.is_bool() ? Value(v.as_int()) : v;
      return v.is_float() ? Value(-v.as_float()) : Value(-v.as_int());
    }
    case ExprKind::kBinary:
      return eval_binary(e);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      RECUR_ASSIGN_OR_RETURN(Value a, eval(*e.args[0]));
      if (a.truthy() == (e.kind == ExprKind::kOr)) return a;
      return eval(*e.args[1]);
    }
    case ExprKind::kCompare:
      return eval_compare(e);
    case ExprKind::kCondExpr: {
      RECUR_ASSIGN_OR_RETURN(Value cond, eval(*e.args[1]));
      if (cond.truthy()) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined(
          "the inline if expression evaluated to false and no else section was defined");
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      Value::List items;
      for (const auto& a : e.args) {
        RECUR_ASSIGN_OR_RETURN(Value v, eval(*a));
        items.push_back(std::move(v));
      }
      if (e.kind == ExprKind::kTuple) return Value::tuple(std::move(items));
      return Value::list(std::move(items));
    }
    case ExprKind::kDict: {
      Value d = Value::dict();
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
        RECUR_ASSIGN_OR_RETURN(Value k, eval(*e.args[i]));
        RECUR_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1]));
        d.as_dict().set_key(k, std::move(v));
      }
      return d;
    }
  }
  return error(e.offset, "unknown expression");
}

Status Interpreter::eval_args(const Expr& e, std::size_t first, CallArgs& args) {
  for (std::size_t i = first; i < e.args.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(Value v, eval(*e.args[i]));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [k, expr] : e.keywords) {
    RECUR_ASSIGN_OR_RETURN(Value v, eval(*expr));
    args.keywords.emplace_back(k, std::move(v));
  }
  return Status::ok();
}

Result<Value> Interpreter::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  CallArgs args;
  if (callee.kind == ExprKind::kGetAttr) {
    RECUR_ASSIGN_OR_RETURN(Value obj, eval(*callee.args[0]));
    if (obj.is_undefined()) return error(callee.offset, undefined_error(obj).message());
    if (has_method(obj, callee.name) && !obj.is_namespace()) {
      RECUR_RETURN_IF_ERROR(eval_args(e, 1, args));
      RECUR_RETURN_IF_ERROR(count_step(e.offset));
      bool found = false;
      auto r = call_method(*this, obj, callee.name, args, found);
      if (!r.is_ok()) return locate(r.status(), e.offset);
      return r;
    }
    Value fn = get_attr(obj, callee.name);
    RECUR_RETURN_IF_ERROR(eval_args(e, 1, args));
    return call(fn, args, e.offset);
  }
  RECUR_ASSIGN_OR_RETURN(Value fn, eval(callee));
  RECUR_RETURN_IF_ERROR(eval_args(e, 1, args));
  return call(fn, args, e.offset);
}

Result<Value> Interpreter::call(const Value& fn, CallArgs& args, std::uint32_t offset) {
  if (fn.is_undefined()) return error(offset, undefined_error(fn).message());
  if (!fn.is_callable()) {
    return error(offset, fmt::format("'{}' object is not callable", fn.type_name()));
  }
  RECUR_RETURN_IF_ERROR(count_step(offset));
  if (++depth_ > options_.limits.max_depth) {
    --depth_;
    return error(offset, "template recursion too deep");
  }
  auto r = fn.as_callable().fn(*this, args);
  --depth_;
  if (!r.is_ok()) return locate(r.status(), offset);
  return r;
}

Result<Value> Interpreter::eval_compare(const Expr& e) {
  RECUR_ASSIGN_OR_RETURN(Value left, eval(*e.args[0]));
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1]));
    const std::string& op = e.ops[i];
    Result<bool> r = false;
    if (op == "==") {
      r = left == right;
    } else if (op == "!=") {
      r = !(left == right);
    } else if (op == "<") {
      r = less_than(left, right);
    } else if (op == ">") {
      r = less_than(right, left);
    } else if (op == "<=") {
      auto gt = less_than(right, left);
      r = gt.is_ok() ? Result<bool>(!*gt) : gt;
    } else if (op == ">=") {
      auto lt = less_than(left, right);
      r = lt.is_ok() ? Result<bool>(!*lt) : lt;
    } else {
      auto in = contains(right, left);
      r = in.is_ok() ? Result<bool>(*in == (op == "in")) : in;
    }
    if (!r.is_ok()) return locate(r.status(), e.offset);
    if (!*r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Result<Value> Interpreter::eval_binary(const Expr& e) {
  RECUR_ASSIGN_OR_RETURN(Value a, eval(*e.args[0]));
  RECUR_ASSIGN_OR_RETURN(Value b, eval(*e.args[1]));
  auto r = binary_op(e.name, a, b);
  if (!r.is_ok()) return locate(r.status(), e.offset);
  return r;
}

Result<Value> Interpreter::eval_slice(const Expr& e) {
  RECUR_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.args[i + 1]) continue;
    RECUR_ASSIGN_OR_RETURN(parts[i], eval(*e.args[i + 1]));
    if (!parts[i].is_none() && !parts[i].is_int() && !parts[i].is_bool()) {
      return error(e.offset, "slice indices must be integers or None");
    }
  }
  std::int64_t step = parts[2].is_int() || parts[2].is_bool() ? parts[2].as_int() : 1;
  if (step == 0) return error(e.offset, "slice step cannot be zero");
  if (obj.is_undefined()) return error(e.offset, undefined_error(obj).message());
  std::vector<char32_t> cps;
  std::int64_t len = 0;
  if (obj.is_string()) {
    cps = decode_utf8(obj.as_string());
    len = static_cast<std::int64_t>(cps.size());
  } else if (obj.is_list()) {
    len = static_cast<std::int64_t>(obj.as_list().size());
  } else {
    return error(e.offset, fmt::format("'{}' object is not subscriptable", obj.type_name()));
  }
  std::int64_t b = 0, end = 0;
  slice_indices(len, parts[0], parts[1], step, b, end);
  std::string s;
  Value::List items;
  for (std::int64_t i = b; step > 0 ? i < end : i > end; i += step) {
    if (obj.is_string()) {
      append_text_code_point(s, cps[static_cast<std::size_t>(i)]);
    } else {
      items.push_back(obj.as_list()[static_cast<std::size_t>(i)]);
    }
  }
  if (obj.is_string()) return Value(std::move(s));
  return Value::list(std::move(items));
}

namespace {

struct PercentSpec {
  bool left = false, zero = false, plus = false, space = false;
  int width = 0;
  int precision = -1;
};

std::string pad(std::string body, const PercentSpec& p, bool numeric) {
  if (static_cast<int>(body.size()) >= p.width) return body;
  std::size_t fill = static_cast<std::size_t>(p.width) - body.size();
  if (p.left) return body + std::string(fill, ' ');
  if (p.zero && numeric) {
    std::size_t sign =
        (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    return body.substr(0, sign) + std::string(fill, '0') + body.substr(sign);
  }
  return std::string(fill, ' ') + body;
}

Result<std::string> format_one(char conv, const PercentSpec& p, const Value& v) {
  if (conv == 's') return pad(v.to_str(), p, false);
  if (conv == 'r') return pad(v.repr(), p, false);
  if (conv == 'c') {
    std::string s;
    if (v.is_string()) return pad(v.as_string(), p, false);
    append_text_code_point(s, static_cast<char32_t>(v.as_int()));
    return pad(s, p, false);
  }
  if (!v.is_number()) {
    return type_error(
        fmt::format("%{} format: a real number is required, not {}", conv, v.type_name()));
  }
  std::string body;
  int prec = p.precision < 0 ? 6 : p.precision;
  switch (conv) {
    case 'd':
    case 'i':
      body = std::to_string(v.is_float() ? static_cast<std::int64_t>(v.as_float()) : v.as_int());
      break;
    case 'x':
      body = fmt::format("{:x}", v.as_int());
      break;
    case 'o':
      body = fmt::format("{:o}", v.as_int());
      break;
    case 'f':
      body = fmt::format("{:.{}f}", v.to_double(), prec);
      break;
    case 'e':
      body = fmt::format("{:.{}e}", v.to_double(), prec);
      break;
    case 'g':
      body = fmt::format("{:.{}g}", v.to_double(), std::max(prec, 1));
      break;
    default:
      return type_error(fmt::format("unsupported format character '{}'", conv));
  }
  if (body[0] != '-' && (p.plus || p.space)) body.insert(0, 1, p.plus ? '+' : ' ');
  return pad(body, p, true);
}

// Python's printf-style "fmt % args" for the conversions templates use: s r c d i x o f e g %.
Result<Value> percent_format(const Value& fmt_value, const Value& args) {
  const std::string& f = fmt_value.as_string();
  std::vector<Value> values;
  if (args.is_tuple()) {
    values = args.as_list();
  } else {
    values.push_back(args);
  }
  std::string out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    PercentSpec p;
    std::size_t j = i + 1;
    for (; j < f.size() && std::string_view("-0+ #").find(f[j]) != std::string_view::npos; ++j) {
      p.left |= f[j] == '-';
      p.zero |= f[j] == '0';
      p.plus |= f[j] == '+';
      p.space |= f[j] == ' ';
    }
    for (; j < f.size() && f[j] >= '0' && f[j] <= '9'; ++j)
      p.width = std::min(p.width * 10 + (f[j] - '0'), 10000);
    if (j < f.size() && f[j] == '.') {
      p.precision = 0;
      for (++j; j < f.size() && f[j] >= '0' && f[j] <= '9'; ++j) {
        p.precision = std::min(p.precision * 10 + (f[j] - '0'), 1000);
      }
    }
    if (j >= f.size()) return type_error("incomplete format");
    i = j;
    if (f[j] == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) return type_error("not enough arguments for format string");
    RECUR_ASSIGN_OR_RETURN(std::string piece, format_one(f[j], p, values[next++]));
    out += piece;
  }
  if (next < values.size() && args.is_tuple()) {
    return type_error("not all arguments converted during string formatting");
  }
  return Value(std::move(out));
}

}  // namespace

}  // namespace recur::tmpl
