// Jinja2's expression grammar. Precedence, lowest first: conditional expression, or, and, not,
// comparisons (==, !=, <, <=, >, >=, in, not in), + -, ~, * / // %, **, unary - +, then postfix
// (.attr, [item], call) and the filter/test chain (| filter, is test).
#include <charconv>

#include "template/parser_impl.h"

namespace recur::tmpl::detail {

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr) {
  std::uint32_t offset = cur().offset;
  RECUR_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
  if (!is_op(",")) return first;
  auto tuple = make(ExprKind::kTuple, offset);
  tuple->args.push_back(std::move(first));
  while (is_op(",")) {
    ++pos_;
    if (cur().kind == TokenKind::kBlockEnd || cur().kind == TokenKind::kVarEnd || is_op(")") ||
        is_op("=")) {
      break;
    }
    RECUR_ASSIGN_OR_RETURN(ExprPtr next, parse_expression(with_condexpr));
    tuple->args.push_back(std::move(next));
  }
  return tuple;
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  RECUR_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
  if (!with_condexpr) return expr;
  ChainGuard chain(depth_);
  while (is_name("if")) {
    if (!chain.add()) return too_deep();
    auto cond = make(ExprKind::kCondExpr, cur().offset);
    ++pos_;
    cond->args.push_back(std::move(expr));
    RECUR_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
    cond->args.push_back(std::move(test));
    if (is_name("else")) {
      ++pos_;
      RECUR_ASSIGN_OR_RETURN(ExprPtr otherwise, parse_expression());
      cond->args.push_back(std::move(otherwise));
    } else {
      cond->args.push_back(nullptr);
    }
    expr = std::move(cond);
  }
  return expr;
}

Result<ExprPtr> Parser::parse_or() {
  return parse_keyword_chain("or", ExprKind::kOr, &Parser::parse_and);
}

Result<ExprPtr> Parser::parse_and() {
  return parse_keyword_chain("and", ExprKind::kAnd, &Parser::parse_not);
}

// `a KEYWORD b KEYWORD c ...`, left-associative; each link counts against the nesting bound, since
// the tree it builds is as deep as the chain is long.
Result<ExprPtr> Parser::parse_keyword_chain(const char* keyword, ExprKind kind,
                                            Result<ExprPtr> (Parser::*operand)()) {
  RECUR_ASSIGN_OR_RETURN(ExprPtr left, (this->*operand)());
  ChainGuard chain(depth_);
  while (is_name(keyword)) {
    if (!chain.add()) return too_deep();
    auto node = make(kind, cur().offset);
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(ExprPtr right, (this->*operand)());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  DepthGuard guard(depth_);
  if (depth_ > kMaxNesting) return too_deep();
  if (is_name("not")) {
    auto node = make(ExprKind::kNot, cur().offset);
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    node->args.push_back(std::move(operand));
    return node;
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  std::uint32_t offset = cur().offset;
  RECUR_ASSIGN_OR_RETURN(ExprPtr first, parse_binary_level(0));
  ExprPtr node;
  while (true) {
    std::string op;
    if (cur().kind == TokenKind::kOperator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
         cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      ++pos_;
    } else if (is_name("in")) {
      op = "in";
      ++pos_;
    } else if (is_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
      op = "not in";
      pos_ += 2;
    } else {
      break;
    }
    if (!node) {
      node = make(ExprKind::kCompare, offset);
      node->args.push_back(std::move(first));
    }
    RECUR_ASSIGN_OR_RETURN(ExprPtr rhs, parse_binary_level(0));
    node->ops.push_back(op);
    node->args.push_back(std::move(rhs));
  }
  return node ? std::move(node) : std::move(first);
}

// Levels: 0 = + -, 1 = ~, 2 = * / // %, 3 = ** (left-associative in Jinja2 too).
Result<ExprPtr> Parser::parse_binary_level(int level) {
  static const std::vector<std::vector<std::string_view>> kLevels = {
      {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
  if (level == 4) return parse_unary(true);
  RECUR_ASSIGN_OR_RETURN(ExprPtr left, parse_binary_level(level + 1));
  const auto& ops = kLevels[level];
  ChainGuard chain(depth_);
  while (cur().kind == TokenKind::kOperator &&
         std::find(ops.begin(), ops.end(), cur().text) != ops.end()) {
    if (!chain.add()) return too_deep();
    auto node = make(ExprKind::kBinary, cur().offset);
    node->name = tokens_[pos_++].text;
    RECUR_ASSIGN_OR_RETURN(ExprPtr right, parse_binary_level(level + 1));
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(depth_);
  if (depth_ > kMaxNesting) return too_deep();
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(is_op("-") ? ExprKind::kNeg : ExprKind::kPos, cur().offset);
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    node->args.push_back(std::move(operand));
  } else {
    RECUR_ASSIGN_OR_RETURN(node, parse_primary());
    RECUR_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
  }
  if (with_filter) return parse_filter_chain(std::move(node));
  return node;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = cur();
  if (t.kind == TokenKind::kName) {
    ++pos_;
    auto node = make(ExprKind::kLiteral, t.offset);
    if (t.text == "true" || t.text == "True") {
      node->literal = Value(true);
    } else if (t.text == "false" || t.text == "False") {
      node->literal = Value(false);
    } else if (t.text == "none" || t.text == "None") {
      node->literal = Value::none();
    } else {
      node->kind = ExprKind::kName;
      node->name = t.text;
    }
    return node;
  }
  if (t.kind == TokenKind::kString) {
    auto node = make(ExprKind::kLiteral, t.offset);
    std::string s;
    while (cur().kind == TokenKind::kString) s += tokens_[pos_++].text;
    node->literal = Value(std::move(s));
    return node;
  }
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) {
    ++pos_;
    auto node = make(ExprKind::kLiteral, t.offset);
    if (t.kind == TokenKind::kFloat) {
      double f = 0;
      std::from_chars(t.text.data(), t.text.data() + t.text.size(), f);
      node->literal = Value(f);
    } else {
      std::int64_t i = 0;
      auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), i);
      if (r.ec != std::errc()) return fail(t, "integer literal out of range");
      node->literal = Value(i);
    }
    return node;
  }
  if (is_op("(")) {
    ++pos_;
    if (is_op(")")) {
      ++pos_;
      return make(ExprKind::kTuple, t.offset);
    }
    RECUR_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple());
    RECUR_RETURN_IF_ERROR(expect_op(")"));
    return inner;
  }
  if (is_op("[")) return parse_sequence_literal(ExprKind::kList, "]");
  if (is_op("{")) return parse_sequence_literal(ExprKind::kDict, "}");
  return fail(t, "unexpected token in expression");
}

Result<ExprPtr> Parser::parse_sequence_literal(ExprKind kind, std::string_view close) {
  auto node = make(kind, cur().offset);
  ++pos_;
  while (!is_op(close)) {
    if (!node->args.empty()) {
      RECUR_RETURN_IF_ERROR(expect_op(","));
      if (is_op(close)) break;
    }
    RECUR_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
    node->args.push_back(std::move(item));
    if (kind == ExprKind::kDict) {
      RECUR_RETURN_IF_ERROR(expect_op(":"));
      RECUR_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      node->args.push_back(std::move(value));
    }
  }
  ++pos_;
  return node;
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  ChainGuard chain(depth_);
  while (true) {
    if (!chain.add()) return too_deep();
    if (is_op(".")) {
      std::uint32_t offset = cur().offset;
      ++pos_;
      if (cur().kind == TokenKind::kInt) {
        auto item = make(ExprKind::kGetItem, offset);
        const Token& t = tokens_[pos_++];
        auto index = make(ExprKind::kLiteral, t.offset);
        std::int64_t i = 0;
        const auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), i);
        if (r.ec != std::errc()) return fail(t, "integer index out of range");
        index->literal = Value(i);
        item->args.push_back(std::move(node));
        item->args.push_back(std::move(index));
        node = std::move(item);
        continue;
      }
      auto attr = make(ExprKind::kGetAttr, offset);
      RECUR_ASSIGN_OR_RETURN(attr->name, expect_identifier());
      attr->args.push_back(std::move(node));
      node = std::move(attr);
    } else if (is_op("[")) {
      RECUR_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
    } else if (is_op("(")) {
      auto call = make(ExprKind::kCall, cur().offset);
      call->args.push_back(std::move(node));
      RECUR_RETURN_IF_ERROR(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  std::uint32_t offset = cur().offset;
  ++pos_;
  ExprPtr parts[3];
  int n_colons = 0;
  while (!is_op("]")) {
    if (is_op(":")) {
      if (++n_colons > 2) return fail(cur(), "too many ':' in slice");
      ++pos_;
      continue;
    }
    if (parts[n_colons]) return fail(cur(), "expected ']'");
    RECUR_ASSIGN_OR_RETURN(parts[n_colons], parse_expression());
  }
  ++pos_;
  if (n_colons == 0) {
    if (!parts[0]) return fail(cur(), "expected a subscript");
    auto item = make(ExprKind::kGetItem, offset);
    item->args.push_back(std::move(node));
    item->args.push_back(std::move(parts[0]));
    return item;
  }
  auto slice = make(ExprKind::kSlice, offset);
  slice->args.push_back(std::move(node));
  for (auto& p : parts) slice->args.push_back(std::move(p));
  return slice;
}

Status Parser::parse_call_args(Expr& call) {
  ++pos_;  // "("
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      RECUR_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
    }
    first = false;
    if (is_op("*") || is_op("**")) return fail(cur(), "*args and **kwargs are not supported");
    if (cur().kind == TokenKind::kName && peek().kind == TokenKind::kOperator &&
        peek().text == "=") {
      std::string key = cur().text;
      pos_ += 2;
      RECUR_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      call.keywords.emplace_back(std::move(key), std::move(value));
    } else {
      if (!call.keywords.empty()) return fail(cur(), "positional argument after keyword argument");
      RECUR_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      call.args.push_back(std::move(value));
    }
  }
  ++pos_;
  return Status::ok();
}

Result<ExprPtr> Parser::parse_filter_chain(ExprPtr node) {
  ChainGuard chain(depth_);
  while (true) {
    if (!chain.add()) return too_deep();
    if (is_op("|")) {
      RECUR_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
    } else if (is_name("is") && node) {
      RECUR_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
    } else if (is_op("(") && node) {
      auto call = make(ExprKind::kCall, cur().offset);
      call->args.push_back(std::move(node));
      RECUR_RETURN_IF_ERROR(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter(ExprPtr node, bool after_pipe) {
  auto filter = make(ExprKind::kFilter, cur().offset);
  if (after_pipe) ++pos_;  // "|"
  RECUR_ASSIGN_OR_RETURN(filter->name, expect_identifier());
  while (is_op(".")) {
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(std::string part, expect_identifier());
    filter->name += "." + part;
  }
  filter->args.push_back(std::move(node));
  if (is_op("(")) RECUR_RETURN_IF_ERROR(parse_call_args(*filter));
  return filter;
}

Result<ExprPtr> Parser::parse_test(ExprPtr node) {
  auto test = make(ExprKind::kTest, cur().offset);
  ++pos_;  // "is"
  if (is_name("not")) {
    test->negated = true;
    ++pos_;
  }
  RECUR_ASSIGN_OR_RETURN(test->name, expect_identifier());
  test->args.push_back(std::move(node));
  if (is_op("(")) {
    RECUR_RETURN_IF_ERROR(parse_call_args(*test));
  } else if ((cur().kind == TokenKind::kName || cur().kind == TokenKind::kString ||
              cur().kind == TokenKind::kInt || cur().kind == TokenKind::kFloat || is_op("[") ||
              is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return fail(cur(), "you cannot chain multiple tests with is");
    RECUR_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    RECUR_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    test->args.push_back(std::move(arg));
  }
  return test;
}

}  // namespace recur::tmpl::detail
