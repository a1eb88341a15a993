// A context-free grammar over bytes, parsed from llama.cpp's GBNF notation, and what decoding
// needs of it: whether a byte string is (a prefix of) a sentence, one byte at a time.
//
// GBNF as accepted here: `name ::= alternatives` rules (a rule may continue on following lines
// while they do not start a new `name ::=`), "literals" and [character classes] with \n \r \t
// \\ \" \] \- \xHH \uHHHH \UHHHHHHHH escapes, [^negated] classes, `.` (any character), ( groups ),
// `|`, and the postfix repetitions * + ? {m} {m,} {m,n} (n at most kMaxRepeat); `#` starts a
// comment. Characters are Unicode code points written as UTF-8: the parser lowers every class to
// byte sequences, so the matcher sees bytes only. Left recursion is an error (the matcher expands
// rules top-down).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::grammar {

inline constexpr int kMaxRepeat = 10000;      // {m,n} bound
inline constexpr int kMaxElements = 1 << 20;  // elements of the lowered grammar
inline constexpr int kMaxGroupDepth = 1024;   // parenthesised groups inside one another

// The lowered grammar: rules of alternatives of sequences, each element a byte set or a rule
// reference. Immutable once built; shared by every sequence constrained by it.
struct Grammar {
  struct Element {
    static constexpr std::int32_t kBytes = -1;
    static constexpr std::int32_t kEnd = -2;  // closes an alternative
    std::int32_t rule = kBytes;               // >= 0: a reference to rules[rule]
    std::uint64_t bytes[4] = {0, 0, 0, 0};    // kBytes: the bytes this element accepts
    bool is_end() const { return rule == kEnd; }
    bool is_bytes() const { return rule == kBytes; }
    bool accepts(std::uint8_t b) const { return (bytes[b >> 6] >> (b & 63)) & 1; }
  };
  struct Rule {
    std::string name;
    // Where each alternative starts in elements; it runs to the next kEnd element.
    std::vector<std::int32_t> alternatives;
  };
  std::vector<Element> elements;
  std::vector<Rule> rules;
  std::int32_t root = 0;
};

// Errors are kInvalidArgument and say where: "grammar line 3, column 14: expected ')'".
Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text,
                                                  std::string_view root = "root");

// The GBNF literal ("...") matching exactly the bytes of `text`: for grammars written in code.
std::string gbnf_literal(std::string_view text);

// The same grammar with every rule name prefixed (`root` becomes `<prefix>root`), so that several
// generated grammars can be combined into one text. Literals, classes and comments are kept.
std::string prefix_rules(std::string_view gbnf, std::string_view prefix);

// Whether `text` is a complete sentence of the grammar (tests and validation; decoding steps a
// Matcher instead).
bool accepts(const Grammar& grammar, std::string_view text);
// Whether `text` can be extended to a sentence.
bool accepts_prefix(const Grammar& grammar, std::string_view text);

}  // namespace recur::grammar
