// Builds the syntax tree from tokens with Jinja2's grammar and operator precedence
// (jinja2/parser.py): statements, expressions, filters, tests, calls, slices, literals.
#pragma once

#include "template/ast.h"
#include "template/lexer.h"
#include "util/status.h"

namespace recur::tmpl {

// Parses the whole template; errors name the line and column of the offending token.
Result<Body> parse_template(const Source& source);

}  // namespace recur::tmpl
