// Jinja2's lexer rules (jinja2/lexer.py, "root", block, variable, comment and raw states) with
// trim_blocks and lstrip_blocks on, written as a hand scanner instead of regexes.
#include "template/lexer.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "template/text.h"

namespace recur::tmpl {
namespace {

constexpr std::array<std::string_view, 26> kOperators = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
    "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(const Source& source) : source_(source), src_(source.text()) {}
  Result<std::vector<Token>> run();

 private:
  Status error(std::size_t offset, std::string_view what) const {
    SourcePos p = source_.position(static_cast<std::uint32_t>(offset));
    return Error(StatusCode::kInvalidArgument, "template syntax error at line {}, column {}: {}",
                 p.line, p.column, what);
  }
  void emit(TokenKind kind, std::string text, std::size_t offset) {
    tokens_.push_back({kind, std::move(text), static_cast<std::uint32_t>(offset)});
  }
  // Emits `text` (starting at `offset`) as data after whitespace control for a tag with `sign`.
  void emit_data(std::string_view text, std::size_t offset, char sign, bool is_variable);
  // Consumes the end of a block tag at pos_ ("-%}", "+%}" or "%}"); false if none is there.
  bool consume_block_end();
  Status lex_comment(std::size_t start);
  Status lex_raw(std::size_t body_start);
  Status lex_tag(bool is_block, std::size_t start);
  Status lex_string(std::size_t start);
  void lex_number();
  // Whether a {% raw %} tag starts at `pos` (just after "{%" and its sign); sets pos_ past it.
  bool match_raw_begin(std::size_t pos);

  const Source& source_;
  std::string_view src_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

void Lexer::emit_data(std::string_view text, std::size_t offset, char sign, bool is_variable) {
  if (sign == '-') {
    text = rstrip_ws(text);
  } else if (sign != '+' && !is_variable) {
    // lstrip_blocks: drop spaces between the start of the line and the tag.
    std::size_t nl = text.rfind('\n');
    std::size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
        rstrip_ws(text.substr(l_pos)).empty()) {
      text = text.substr(0, l_pos);
    }
  }
  if (!text.empty()) emit(TokenKind::kData, std::string(text), offset);
}

bool Lexer::consume_block_end() {
  std::string_view rest = src_.substr(pos_);
  if (rest.starts_with("-%}")) {
    pos_ += 3;
    pos_ = src_.size() - lstrip_ws(src_.substr(pos_)).size();
  } else if (rest.starts_with("+%}")) {
    pos_ += 3;
  } else if (rest.starts_with("%}")) {
    pos_ += 2;
    if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
  } else {
    return false;
  }
  line_starting_ = src_[pos_ - 1] == '\n';
  return true;
}

Status Lexer::lex_comment(std::size_t start) {
  std::size_t end = src_.find("#}", pos_);
  if (end == std::string_view::npos) return error(start, "missing end of comment tag");
  char before = end > pos_ ? src_[end - 1] : 0;
  pos_ = end + 2;
  if (before == '-') {
    pos_ = src_.size() - lstrip_ws(src_.substr(pos_)).size();
  } else if (before != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
    ++pos_;
  }
  line_starting_ = src_[pos_ - 1] == '\n';
  return Status::ok();
}

bool Lexer::match_raw_begin(std::size_t pos) {
  while (pos < src_.size() && is_ws(src_[pos])) ++pos;
  if (src_.substr(pos, 3) != "raw" || (pos + 3 < src_.size() && is_name_char(src_[pos + 3]))) {
    return false;
  }
  pos += 3;
  while (pos < src_.size() && is_ws(src_[pos])) ++pos;
  std::string_view rest = src_.substr(pos);
  if (rest.starts_with("-%}")) {
    pos += 3;
    while (pos < src_.size() && is_ws(src_[pos])) ++pos;
  } else if (rest.starts_with("%}")) {
    pos += 2;  // no trim_blocks suffix on the raw begin tag in Jinja2's rule
  } else {
    return false;
  }
  pos_ = pos;
  return true;
}

Status Lexer::lex_raw(std::size_t body_start) {
  std::size_t search = body_start;
  while (true) {
    std::size_t tag = src_.find("{%", search);
    if (tag == std::string_view::npos) return error(body_start, "missing end of raw directive");
    std::size_t p = tag + 2;
    char sign = (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ? src_[p] : 0;
    if (sign) ++p;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.substr(p, 6) == "endraw") {
      p += 6;
      while (p < src_.size() && is_ws(src_[p])) ++p;
      std::size_t saved = pos_;
      pos_ = p;
      if (consume_block_end()) {
        emit_data(src_.substr(body_start, tag - body_start), body_start, sign, false);
        return Status::ok();
      }
      pos_ = saved;
    }
    search = tag + 2;
  }
}

Status Lexer::lex_string(std::size_t start) {
  char quote = src_[pos_];
  std::size_t p = pos_ + 1;
  while (p < src_.size() && src_[p] != quote) {
    if (src_[p] == '\\') ++p;
    ++p;
  }
  if (p >= src_.size()) return error(start, "unterminated string literal");
  RECUR_ASSIGN_OR_RETURN(std::string value, unescape_python(src_.substr(pos_ + 1, p - pos_ - 1)));
  emit(TokenKind::kString, std::move(value), start);
  pos_ = p + 1;
  return Status::ok();
}

void Lexer::lex_number() {
  std::size_t start = pos_;
  auto digits = [&] {
    while (pos_ < src_.size() && (is_digit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
  };
  digits();
  bool is_float = false;
  if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
    is_float = true;
    ++pos_;
    digits();
  }
  if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
    std::size_t p = pos_ + 1;
    if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
    if (p < src_.size() && is_digit(src_[p])) {
      is_float = true;
      pos_ = p;
      digits();
    }
  }
  std::string text(src_.substr(start, pos_ - start));
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  emit(is_float ? TokenKind::kFloat : TokenKind::kInt, std::move(text), start);
}

Status Lexer::lex_tag(bool is_block, std::size_t start) {
  int depth = 0;  // open brackets: "}}" inside a dict literal does not end the tag
  while (true) {
    while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
    if (pos_ >= src_.size()) {
      return error(start, is_block ? "missing end of block tag '%}'" : "missing end of '}}'");
    }
    std::string_view rest = src_.substr(pos_);
    std::size_t end_offset = pos_;
    if (depth == 0 && is_block && consume_block_end()) {
      emit(TokenKind::kBlockEnd, "", end_offset);
      return Status::ok();
    }
    if (depth == 0 && !is_block && (rest.starts_with("-}}") || rest.starts_with("}}"))) {
      bool strip = rest[0] == '-';
      pos_ += strip ? 3 : 2;
      if (strip) pos_ = src_.size() - lstrip_ws(src_.substr(pos_)).size();
      line_starting_ = src_[pos_ - 1] == '\n';
      emit(TokenKind::kVarEnd, "", end_offset);
      return Status::ok();
    }
    char c = rest[0];
    if (c == '\'' || c == '"') {
      RECUR_RETURN_IF_ERROR(lex_string(pos_));
    } else if (is_digit(c)) {
      lex_number();
    } else if (is_name_start(c)) {
      std::size_t s = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      emit(TokenKind::kName, std::string(src_.substr(s, pos_ - s)), s);
    } else {
      auto op = std::find_if(kOperators.begin(), kOperators.end(),
                             [&](std::string_view o) { return rest.starts_with(o); });
      if (op == kOperators.end()) return error(pos_, fmt::format("unexpected char '{}'", c));
      if (*op == "(" || *op == "[" || *op == "{") ++depth;
      if ((*op == ")" || *op == "]" || *op == "}") && depth > 0) --depth;
      emit(TokenKind::kOperator, std::string(*op), pos_);
      pos_ += op->size();
    }
  }
}

Result<std::vector<Token>> Lexer::run() {
  while (pos_ < src_.size()) {
    std::size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string_view::npos || tag + 1 >= src_.size()) break;
      char n = src_[tag + 1];
      if (n == '{' || n == '%' || n == '#') break;
      ++tag;
    }
    if (tag == std::string_view::npos || tag + 1 >= src_.size()) {
      emit(TokenKind::kData, std::string(src_.substr(pos_)), pos_);
      break;
    }
    char type = src_[tag + 1];
    std::size_t after = tag + 2;
    char sign =
        (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) ? src_[after] : 0;
    if (sign) ++after;
    std::string_view text = src_.substr(pos_, tag - pos_);
    std::size_t text_offset = pos_;
    if (type == '%' && match_raw_begin(after)) {
      emit_data(text, text_offset, sign, false);
      RECUR_RETURN_IF_ERROR(lex_raw(pos_));
      continue;
    }
    emit_data(text, text_offset, sign, type == '{');
    pos_ = after;
    if (type == '#') {
      RECUR_RETURN_IF_ERROR(lex_comment(tag));
    } else {
      emit(type == '%' ? TokenKind::kBlockBegin : TokenKind::kVarBegin, "", tag);
      RECUR_RETURN_IF_ERROR(lex_tag(type == '%', tag));
    }
  }
  emit(TokenKind::kEof, "", src_.size());
  return std::move(tokens_);
}

}  // namespace

Source::Source(std::string_view raw) {
  text_.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      text_ += '\n';
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      text_ += raw[i];
    }
  }
  if (!text_.empty() && text_.back() == '\n') text_.pop_back();
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(static_cast<std::uint32_t>(i + 1));
  }
}

SourcePos Source::position(std::uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
  return {line, offset - line_starts_[line - 1] + 1};
}

Result<std::vector<Token>> tokenize(const Source& source) { return Lexer(source).run(); }

}  // namespace recur::tmpl
