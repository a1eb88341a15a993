// Value construction, truthiness, equality and Python's str()/repr() rules.
#include "template/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace recur::tmpl {

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b), i_(b ? 1 : 0) {}
Value::Value(std::int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  for (const Value& item : items) v.depth_ = std::max(v.depth_, item.depth());
  ++v.depth_;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::dict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>();
  return v;
}
Value Value::namespace_object() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}
Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

std::uint32_t Value::depth() const {
  if (kind_ == Kind::kList) return depth_;
  if (kind_ == Kind::kDict) return dict_->depth;
  return 0;
}

bool Value::is_namespace() const { return kind_ == Kind::kDict && dict_->is_namespace; }

double Value::to_double() const {
  if (kind_ == Kind::kFloat) return f_;
  return static_cast<double>(i_);
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kList:
      return !list_->empty();
    case Kind::kDict:
      return dict_->is_namespace || !dict_->items.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string python_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest round-trip digits in scientific form, then laid out as Python's float_repr_style.
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  std::size_t e_pos = sci.find('e');
  std::string digits;
  for (std::size_t i = 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exp10 = std::atoi(sci.c_str() + e_pos + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // position of the decimal point relative to the digits
  std::string out = neg ? "-" : "";
  if (decpt > 16 || decpt < -3) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
    out += digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

std::string python_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return s_;
    default:
      return repr();
  }
}

std::string Value::repr() const { return repr(static_cast<int>(kMaxValueDepth) + 8); }

std::string Value::repr(int max_depth) const {
  if (max_depth <= 0 && (kind_ == Kind::kList || kind_ == Kind::kDict)) return "...";
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return python_float_repr(f_);
    case Kind::kString:
      return python_str_repr(s_);
    case Kind::kList: {
      std::string out = tuple_ ? "(" : "[";
      for (std::size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr(max_depth - 1);
      }
      if (tuple_) return out + (list_->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = dict_->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr(max_depth - 1);
      }
      return out + (dict_->is_namespace ? "}>" : "}");
    }
    case Kind::kCallable:
      return "<function " + fn_->name + ">";
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "";
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    return a.i_ == b.i_;
  }
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.s_ == b.s_;
    case Kind::kList:
      return *a.list_ == *b.list_;
    case Kind::kDict: {
      if (a.dict_ == b.dict_) return true;
      if (a.dict_->is_namespace || b.dict_->is_namespace) return false;
      if (a.dict_->items.size() != b.dict_->items.size()) return false;
      for (const auto& [k, v] : a.dict_->items) {
        const Value* other = b.dict_->find_key(k);  // by Python equality of keys
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
    case Kind::kCallable:
      return a.fn_ == b.fn_;
    default:
      return false;
  }
}

const Value* Value::Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}
Value* Value::Dict::find(std::string_view key) {
  for (auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}
const Value* Value::Dict::find_key(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}
void Value::Dict::set(std::string_view key, Value v) {
  if (Value* existing = find(key)) {
    depth = std::max(depth, v.depth() + 1);
    *existing = std::move(v);
  } else {
    depth = std::max(depth, v.depth() + 1);
    items.emplace_back(Value(key), std::move(v));
  }
}
void Value::Dict::set_key(const Value& key, Value v) {
  depth = std::max(depth, v.depth() + 1);
  if (const Value* existing = find_key(key)) {
    *const_cast<Value*>(existing) = std::move(v);
  } else {
    items.emplace_back(key, std::move(v));
  }
}
bool Value::Dict::erase(std::string_view key) {
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (it->first.is_string() && it->first.as_string() == key) {
      items.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace recur::tmpl
