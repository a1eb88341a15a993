// Splits Jinja template source into tokens exactly as Jinja2's lexer does with Hugging Face's
// settings (trim_blocks, lstrip_blocks, no kept trailing newline): data text with whitespace
// control already applied, and the tokens inside {{ }} and {% %}. Comments are dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::tmpl {

enum class TokenKind : std::uint8_t {
  kData,        // literal text (also the body of {% raw %})
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,
  kFloat,
  kOperator,  // text holds the operator: "+", "//", "==", "(", ...
  kEof,
};

struct Token {
  TokenKind kind;
  std::string text;
  std::uint32_t offset;  // byte offset into the normalized source, for line and column
};

struct SourcePos {
  std::uint32_t line;    // 1-based
  std::uint32_t column;  // 1-based, in bytes
};

// The source after newline normalization (\r\n and \r become \n, one trailing \n dropped) and a
// map from offsets to line/column.
class Source {
 public:
  explicit Source(std::string_view raw);
  const std::string& text() const { return text_; }
  SourcePos position(std::uint32_t offset) const;

 private:
  std::string text_;
  std::vector<std::uint32_t> line_starts_;
};

Result<std::vector<Token>> tokenize(const Source& source);

}  // namespace recur::tmpl
