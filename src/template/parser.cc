// Jinja2's recursive-descent grammar (jinja2/parser.py): the statements and the entry point.
// Expressions are in parser_expr.cc.
#include "template/parser.h"

#include "template/parser_impl.h"

namespace recur::tmpl {
namespace detail {

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

}  // namespace detail

Result<Body> parse_template(const Source& source) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  return detail::Parser(source, std::move(tokens)).parse_all();
}

}  // namespace recur::tmpl
