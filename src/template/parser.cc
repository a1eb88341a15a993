// Jinja2's recursive-descent grammar. Precedence, lowest first: conditional expression, or, and,
// not, comparisons (==, !=, <, <=, >, >=, in, not in), + -, ~, * / // %, **, unary - +, then
// postfix (.attr, [item], call) and the filter/test chain (| filter, is test).
#include "template/parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>

namespace recur::tmpl {
namespace {

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)) {}

  Result<Body> parse_all() {
    RECUR_ASSIGN_OR_RETURN(Body body, parse_body({}));
    if (cur().kind != TokenKind::kEof) return fail(cur(), "unexpected end tag");
    return body;
  }

 private:
  using Ends = std::initializer_list<std::string_view>;

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(std::size_t n = 1) const {
    return tokens_[std::min(pos_ + n, tokens_.size() - 1)];
  }
  bool is_op(std::string_view op) const {
    return cur().kind == TokenKind::kOperator && cur().text == op;
  }
  bool is_name(std::string_view n) const {
    return cur().kind == TokenKind::kName && cur().text == n;
  }
  Status fail(const Token& t, std::string_view what) const {
    SourcePos p = source_.position(t.offset);
    std::string got = t.kind == TokenKind::kEof        ? "end of template"
                      : t.kind == TokenKind::kBlockEnd ? "end of statement block"
                      : t.kind == TokenKind::kVarEnd   ? "end of print statement"
                                                       : "'" + t.text + "'";
    return Error(StatusCode::kInvalidArgument,
                 "template syntax error at line {}, column {}: {} (got {})", p.line, p.column, what,
                 got);
  }
  Status expect_op(std::string_view op) {
    if (!is_op(op)) return fail(cur(), fmt::format("expected '{}'", op));
    ++pos_;
    return Status::ok();
  }
  Status expect_name(std::string_view n) {
    if (!is_name(n)) return fail(cur(), fmt::format("expected '{}'", n));
    ++pos_;
    return Status::ok();
  }
  Status expect_block_end() {
    if (cur().kind != TokenKind::kBlockEnd) return fail(cur(), "expected end of statement block");
    ++pos_;
    return Status::ok();
  }
  Result<std::string> expect_identifier() {
    if (cur().kind != TokenKind::kName) return fail(cur(), "expected a name");
    return tokens_[pos_++].text;
  }
  static ExprPtr make(ExprKind kind, std::uint32_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }

  // Statements.
  Result<Body> parse_body(Ends ends);
  Result<StmtPtr> parse_statement();
  Result<StmtPtr> parse_if(std::uint32_t offset);
  Result<StmtPtr> parse_for(std::uint32_t offset);
  Result<StmtPtr> parse_set(std::uint32_t offset);
  Result<StmtPtr> parse_macro(std::uint32_t offset);
  Result<StmtPtr> parse_call_block(std::uint32_t offset);
  Result<StmtPtr> parse_filter_block(std::uint32_t offset);
  Result<StmtPtr> parse_with(std::uint32_t offset);
  Result<std::vector<Target>> parse_targets(bool allow_attr);
  Result<std::vector<Param>> parse_params();
  // Consumes "{% endNAME %}" after parse_body stopped at it.
  Status expect_end(std::string_view end_name) {
    RECUR_RETURN_IF_ERROR(expect_name(end_name));
    return expect_block_end();
  }

  // Expressions.
  Result<ExprPtr> parse_tuple(bool with_condexpr = true);
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_binary_level(int level);
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_chain(ExprPtr node);
  Result<ExprPtr> parse_filter(ExprPtr node, bool after_pipe = true);
  Result<ExprPtr> parse_test(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Status parse_call_args(Expr& call);
  Result<ExprPtr> parse_sequence_literal(ExprKind kind, std::string_view close);

  // Nesting of expressions and statements; bounded so hostile input cannot exhaust the stack.
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(++d) {}
    ~DepthGuard() { --depth; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    int& depth;
  };
  static constexpr int kMaxNesting = 200;
  Status too_deep() const { return fail(cur(), "template nested too deeply"); }

  const Source& source_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

Result<Body> Parser::parse_body(Ends ends) {
  Body body;
  while (cur().kind != TokenKind::kEof) {
    const Token& t = cur();
    if (t.kind == TokenKind::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kData;
      s->offset = t.offset;
      s->text = t.text;
      body.push_back(std::move(s));
      ++pos_;
    } else if (t.kind == TokenKind::kVarBegin) {
      ++pos_;
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->offset = t.offset;
      RECUR_ASSIGN_OR_RETURN(s->expr, parse_tuple());
      if (cur().kind != TokenKind::kVarEnd) return fail(cur(), "expected end of print statement");
      ++pos_;
      body.push_back(std::move(s));
    } else {  // block begin
      const Token& name = peek();
      if (name.kind == TokenKind::kName &&
          std::find(ends.begin(), ends.end(), name.text) != ends.end()) {
        ++pos_;  // leave the end keyword for the caller
        return body;
      }
      ++pos_;
      RECUR_ASSIGN_OR_RETURN(StmtPtr s, parse_statement());
      if (s) body.push_back(std::move(s));
    }
  }
  if (ends.size() > 0) {
    return fail(cur(), fmt::format("unexpected end of template, expected '{}'", *ends.begin()));
  }
  return body;
}

Result<StmtPtr> Parser::parse_statement() {
  DepthGuard guard(depth_);
  if (depth_ > kMaxNesting) return too_deep();
  const Token& t = cur();
  if (t.kind != TokenKind::kName) return fail(t, "expected a statement name");
  std::string kw = t.text;
  std::uint32_t offset = t.offset;
  ++pos_;
  if (kw == "if") return parse_if(offset);
  if (kw == "for") return parse_for(offset);
  if (kw == "set") return parse_set(offset);
  if (kw == "macro") return parse_macro(offset);
  if (kw == "call") return parse_call_block(offset);
  if (kw == "filter") return parse_filter_block(offset);
  if (kw == "with") return parse_with(offset);
  if (kw == "break" || kw == "continue") {
    auto s = std::make_unique<Stmt>();
    s->kind = kw == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    s->offset = offset;
    RECUR_RETURN_IF_ERROR(expect_block_end());
    return s;
  }
  if (kw == "generation") {  // Hugging Face's assistant-mask marker: renders its body unchanged
    RECUR_RETURN_IF_ERROR(expect_block_end());
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kWith;
    s->offset = offset;
    RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endgeneration"}));
    RECUR_RETURN_IF_ERROR(expect_end("endgeneration"));
    return s;
  }
  return fail(t, fmt::format("unknown tag '{}'", kw));
}

Result<StmtPtr> Parser::parse_if(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kIf;
  s->offset = offset;
  while (true) {
    RECUR_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(false));
    RECUR_RETURN_IF_ERROR(expect_block_end());
    RECUR_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}));
    s->conditions.push_back(std::move(cond));
    s->bodies.push_back(std::move(body));
    std::string end = tokens_[pos_++].text;
    if (end == "elif") continue;
    if (end == "else") {
      RECUR_RETURN_IF_ERROR(expect_block_end());
      RECUR_ASSIGN_OR_RETURN(s->else_body, parse_body({"endif"}));
      RECUR_RETURN_IF_ERROR(expect_end("endif"));
      return s;
    }
    RECUR_RETURN_IF_ERROR(expect_block_end());
    return s;
  }
}

Result<std::vector<Target>> Parser::parse_targets(bool allow_attr) {
  std::vector<Target> targets;
  bool paren = is_op("(");
  if (paren) ++pos_;
  while (true) {
    Target t;
    RECUR_ASSIGN_OR_RETURN(t.name, expect_identifier());
    if (allow_attr && is_op(".")) {
      ++pos_;
      RECUR_ASSIGN_OR_RETURN(t.attr, expect_identifier());
    }
    targets.push_back(std::move(t));
    if (!is_op(",")) break;
    ++pos_;
    if (cur().kind != TokenKind::kName) break;
  }
  if (paren) RECUR_RETURN_IF_ERROR(expect_op(")"));
  return targets;
}

Result<StmtPtr> Parser::parse_for(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->offset = offset;
  RECUR_ASSIGN_OR_RETURN(s->targets, parse_targets(false));
  RECUR_RETURN_IF_ERROR(expect_name("in"));
  RECUR_ASSIGN_OR_RETURN(s->expr, parse_tuple(false));
  if (is_name("if")) {
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(s->cond, parse_expression());
  }
  if (is_name("recursive")) return fail(cur(), "recursive loops are not supported");
  RECUR_RETURN_IF_ERROR(expect_block_end());
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endfor", "else"}));
  if (tokens_[pos_++].text == "else") {
    RECUR_RETURN_IF_ERROR(expect_block_end());
    RECUR_ASSIGN_OR_RETURN(s->else_body, parse_body({"endfor"}));
    ++pos_;
  }
  RECUR_RETURN_IF_ERROR(expect_block_end());
  return s;
}

Result<StmtPtr> Parser::parse_set(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->offset = offset;
  RECUR_ASSIGN_OR_RETURN(s->targets, parse_targets(true));
  if (is_op("=")) {
    ++pos_;
    s->kind = StmtKind::kSet;
    RECUR_ASSIGN_OR_RETURN(s->expr, parse_tuple());
    RECUR_RETURN_IF_ERROR(expect_block_end());
    return s;
  }
  s->kind = StmtKind::kSetBlock;
  if (is_op("|")) {
    RECUR_ASSIGN_OR_RETURN(s->filter, parse_filter_chain(nullptr));
  }
  RECUR_RETURN_IF_ERROR(expect_block_end());
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endset"}));
  RECUR_RETURN_IF_ERROR(expect_end("endset"));
  return s;
}

Result<std::vector<Param>> Parser::parse_params() {
  std::vector<Param> params;
  RECUR_RETURN_IF_ERROR(expect_op("("));
  while (!is_op(")")) {
    if (!params.empty()) RECUR_RETURN_IF_ERROR(expect_op(","));
    if (is_op(")")) break;
    Param p;
    RECUR_ASSIGN_OR_RETURN(p.name, expect_identifier());
    if (is_op("=")) {
      ++pos_;
      RECUR_ASSIGN_OR_RETURN(p.default_value, parse_expression());
    } else if (!params.empty() && params.back().default_value) {
      return fail(cur(), "non-default argument follows default argument");
    }
    params.push_back(std::move(p));
  }
  ++pos_;
  return params;
}

Result<StmtPtr> Parser::parse_macro(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->offset = offset;
  RECUR_ASSIGN_OR_RETURN(s->text, expect_identifier());
  RECUR_ASSIGN_OR_RETURN(s->params, parse_params());
  RECUR_RETURN_IF_ERROR(expect_block_end());
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endmacro"}));
  RECUR_RETURN_IF_ERROR(expect_end("endmacro"));
  return s;
}

Result<StmtPtr> Parser::parse_call_block(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kCallBlock;
  s->offset = offset;
  if (is_op("(")) {
    RECUR_ASSIGN_OR_RETURN(s->params, parse_params());
  }
  RECUR_ASSIGN_OR_RETURN(s->expr, parse_expression());
  if (s->expr->kind != ExprKind::kCall) return fail(cur(), "expected a call after 'call'");
  RECUR_RETURN_IF_ERROR(expect_block_end());
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endcall"}));
  RECUR_RETURN_IF_ERROR(expect_end("endcall"));
  return s;
}

Result<StmtPtr> Parser::parse_filter_block(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFilterBlock;
  s->offset = offset;
  RECUR_ASSIGN_OR_RETURN(s->filter, parse_filter(nullptr, /*after_pipe=*/false));
  RECUR_ASSIGN_OR_RETURN(s->filter, parse_filter_chain(std::move(s->filter)));
  RECUR_RETURN_IF_ERROR(expect_block_end());
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endfilter"}));
  RECUR_RETURN_IF_ERROR(expect_end("endfilter"));
  return s;
}

Result<StmtPtr> Parser::parse_with(std::uint32_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kWith;
  s->offset = offset;
  while (cur().kind != TokenKind::kBlockEnd) {
    if (!s->targets.empty()) RECUR_RETURN_IF_ERROR(expect_op(","));
    RECUR_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    RECUR_RETURN_IF_ERROR(expect_op("="));
    RECUR_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    s->targets.push_back({std::move(name), ""});
    s->values.push_back(std::move(value));
  }
  ++pos_;
  RECUR_ASSIGN_OR_RETURN(s->body, parse_body({"endwith"}));
  RECUR_RETURN_IF_ERROR(expect_end("endwith"));
  return s;
}

// ---- expressions ----

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
  while (is_name("if")) {
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
  RECUR_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    auto node = make(ExprKind::kOr, cur().offset);
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  RECUR_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    auto node = make(ExprKind::kAnd, cur().offset);
    ++pos_;
    RECUR_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
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
  while (cur().kind == TokenKind::kOperator &&
         std::find(ops.begin(), ops.end(), cur().text) != ops.end()) {
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
  while (true) {
    if (is_op(".")) {
      std::uint32_t offset = cur().offset;
      ++pos_;
      if (cur().kind == TokenKind::kInt) {
        auto item = make(ExprKind::kGetItem, offset);
        auto index = make(ExprKind::kLiteral, cur().offset);
        index->literal = Value(static_cast<std::int64_t>(std::stoll(tokens_[pos_++].text)));
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
  while (true) {
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

}  // namespace

Result<Body> parse_template(const Source& source) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  return Parser(source, std::move(tokens)).parse_all();
}

}  // namespace recur::tmpl
