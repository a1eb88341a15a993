// The syntax tree of a parsed template: expressions and statements, each with the byte offset of
// its first token for error positions. Built by parser.cc, walked by interpreter.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace recur::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : std::uint8_t {
  kLiteral,   // literal
  kName,      // name
  kGetAttr,   // args[0].name
  kGetItem,   // args[0][args[1]]
  kSlice,     // args[0][args[1]:args[2]:args[3]] (null = omitted)
  kCall,      // args[0](args[1..], keywords)
  kFilter,    // args[0] | name(args[1..], keywords); args[0] null in filter blocks
  kTest,      // args[0] is [not] name(args[1..])
  kNot,       // not args[0]
  kNeg,       // -args[0]
  kPos,       // +args[0]
  kBinary,    // args[0] name args[1] for + - * / // % ** ~
  kAnd,       // args[0] and args[1]
  kOr,        // args[0] or args[1]
  kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
  kCondExpr,  // args[0] if args[1] else args[2] (args[2] may be null)
  kList,      // [args...]
  kTuple,     // (args...), lists in Python terms for our purposes
  kDict,      // {args[0]: args[1], ...}
};

struct Expr {
  ExprKind kind;
  std::uint32_t offset = 0;
  std::string name;
  Value literal;
  bool negated = false;  // kTest: "is not"
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;  // kCompare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind : std::uint8_t {
  kData,         // text
  kOutput,       // {{ expr }}
  kIf,           // conditions[i] -> bodies[i]; else_body
  kFor,          // for targets in expr [if cond] body [else else_body]
  kSet,          // set targets = expr
  kSetBlock,     // set targets[0] [| filter] body endset
  kMacro,        // macro name(params) body
  kCallBlock,    // call(params) expr body
  kFilterBlock,  // filter chain body
  kWith,         // with targets = values body
  kBreak,
  kContinue,
};

// An assignment target: a name, or "name.attr" for namespace attributes.
struct Target {
  std::string name;
  std::string attr;
};

struct Param {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  StmtKind kind;
  std::uint32_t offset = 0;
  std::string text;  // kData text, kMacro name
  ExprPtr expr;      // output / for iterable / set value / call expression
  ExprPtr cond;      // for ... if cond
  ExprPtr filter;    // kSetBlock / kFilterBlock: filter chain with a null innermost operand
  std::vector<Target> targets;
  std::vector<ExprPtr> conditions;  // kIf
  std::vector<Body> bodies;         // kIf
  std::vector<ExprPtr> values;      // kWith
  std::vector<Param> params;        // kMacro, kCallBlock
  Body body;
  Body else_body;
};

}  // namespace recur::tmpl
