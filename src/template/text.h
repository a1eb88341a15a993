// Text helpers with Python's str semantics over UTF-8: whitespace, code-point indexing, string
// literal escapes. Internal to template/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::tmpl {

// Python's str.isspace for the ASCII range and the C1/Latin-1 spaces (\x1c-\x1f, \x85, \xa0).
inline bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (c >= '\x1c' && c <= '\x1f');
}
// Python's str.isspace for any code point (the Unicode White_Space set Python uses).
bool is_py_space(char32_t c);
// Python's str.rstrip()/lstrip() with no argument: ASCII and Unicode whitespace.
std::string_view rstrip_ws(std::string_view s);
std::string_view lstrip_ws(std::string_view s);

// Code points of UTF-8 text (invalid bytes become U+FFFD-like single units, kept as is).
std::vector<char32_t> decode_utf8(std::string_view s);
// UTF-8 of one code point of decode_utf8's output: a kept lone byte (U+DC80-U+DCFF) is written back
// as that byte, so decoding and encoding give the input bytes back.
void append_text_code_point(std::string& out, char32_t cp);
std::string encode_utf8(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end);
std::size_t count_code_points(std::string_view s);

// Python's string-literal escapes (\n, \t, \\, \', \", \xNN, \uNNNN, \UNNNNNNNN, octal,
// \<newline>); unknown escapes are kept verbatim as Python does.
Result<std::string> unescape_python(std::string_view body);

// Python's str.upper/lower for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (other
// scripts are returned unchanged; full Unicode casing would need ICU, kept to tokenizer/).
char32_t upper_cp(char32_t c);
char32_t lower_cp(char32_t c);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);

// Python's str.strip/lstrip/rstrip with an optional set of characters (nullptr = whitespace).
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace recur::tmpl
