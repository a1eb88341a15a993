// The parser's class, shared by parser.cc (statements) and parser_expr.cc (expressions).
// Internal to template/.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"
#include "util/status.h"

namespace recur::tmpl::detail {

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
  Result<ExprPtr> parse_keyword_chain(const char* keyword, ExprKind kind,
                                      Result<ExprPtr> (Parser::*operand)());
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
  // Each operator of a chain ("a + b + c", "x.a.b", "v | f | g") puts the tree so far one level
  // deeper, and evaluation recurses per level: chains count as nesting too.
  struct ChainGuard {
    explicit ChainGuard(int& d) : depth(d) {}
    ~ChainGuard() { depth -= links; }
    ChainGuard(const ChainGuard&) = delete;
    ChainGuard& operator=(const ChainGuard&) = delete;
    bool add() {
      ++links;
      return ++depth <= kMaxNesting;
    }
    int& depth;
    int links = 0;
  };
  static constexpr int kMaxNesting = 200;
  Status too_deep() const { return fail(cur(), "template nested too deeply"); }

  const Source& source_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace recur::tmpl::detail
