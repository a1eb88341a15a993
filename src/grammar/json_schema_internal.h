// Pieces of the JSON Schema compiler shared by its files (json_schema*.cc): GBNF text helpers,
// sets of code points and how one of them is written inside a JSON string, the regex (pattern)
// and format translations, and integer ranges. Not a public header: only json_schema*.cc use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace recur::grammar::schema_detail {

inline constexpr char32_t kMaxCodepoint = 0x10FFFF;

// Code points of UTF-8 text (a stray byte stands for itself).
std::u32string decode_utf8(std::string_view s);
std::string utf8_of(char32_t cp);

// A set of code points as sorted, disjoint, non-adjacent closed intervals.
class CodepointSet {
 public:
  using Range = std::pair<char32_t, char32_t>;
  CodepointSet() = default;
  explicit CodepointSet(std::vector<Range> ranges);
  static CodepointSet of(char32_t lo, char32_t hi) { return CodepointSet({{lo, hi}}); }
  void add(char32_t lo, char32_t hi);
  void add(const CodepointSet& other);
  CodepointSet complement() const;  // within [0, kMaxCodepoint]
  CodepointSet minus(const CodepointSet& other) const;
  bool contains(char32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

// A GBNF class ("[a-z]", or "[^...]" when that is shorter) of exactly these code points; surrogates
// are left out. The set must hold a non-surrogate.
std::string gbnf_class(const CodepointSet& set);

// The GBNF expression of one JSON string character (unescaped, or its escape for " \ and control
// characters) that decodes to a code point of `set`: one form per code point, the one
// JSON.stringify writes. Empty when the set is empty.
std::string json_char_in(const CodepointSet& set);

// Any one JSON string character, every escape form included (rule "char").
inline constexpr std::string_view kJsonCharBody =
    R"([^\x22\x5c\x00-\x1f] | "\\" ( [\x22\x5c/bfnrt] | "u" [0-9a-fA-F]{4} ))";

// The JSON text of a string (JSON.stringify's escapes: \" \\ \b \f \n \r \t, \u00xx for other
// control characters, everything else as is).
std::string json_quote(std::string_view utf8);

// A regex (ECMA-262 subset) as a GBNF expression over JSON string content, rule "char" being one
// any JSON character. Unanchored sides get "char*". Errors name 'pattern' at `path`. `elements`
// receives an estimate of the lowered size.
Result<std::string> pattern_to_gbnf(std::string_view pattern, std::string_view path,
                                    std::int64_t* elements);

// The content expression of a supported "format" value, or nullopt.
std::optional<std::string> format_to_gbnf(std::string_view format);

// Integers in [lo, hi] (either side open when nullopt) as a GBNF expression: no leading zeros, no
// "-0". Requires lo <= hi when both are set.
std::string integer_range_gbnf(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi);

}  // namespace recur::grammar::schema_detail
