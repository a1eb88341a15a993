#include <gtest/gtest.h>

#include "grammar/char_class.h"
#include "grammar/grammar.h"

namespace recur::grammar {
namespace {

std::shared_ptr<const Grammar> parse(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? *g : nullptr;
}

std::string parse_error(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_FALSE(g.is_ok()) << text;
  return g.is_ok() ? "" : g.status().message();
}

TEST(Gbnf, LiteralsAlternativesAndGroups) {
  auto g = parse(R"(root ::= "ab" ("c" | "de")+ x
x ::= "!" | )");
  EXPECT_TRUE(accepts(*g, "abc!"));
  EXPECT_TRUE(accepts(*g, "abdecde"));
  EXPECT_TRUE(accepts(*g, "abc"));
  EXPECT_FALSE(accepts(*g, "ab"));
  EXPECT_FALSE(accepts(*g, "abcd"));
  EXPECT_TRUE(accepts_prefix(*g, "abcd"));
  EXPECT_FALSE(accepts_prefix(*g, "abx"));
}

TEST(Gbnf, RulesContinueOnLaterLinesUntilTheNextDefinition) {
  auto g = parse(R"(# a comment
root ::= a
  | b   # trailing comment
  "c"
a ::= "x"
b ::= "y")");
  EXPECT_TRUE(accepts(*g, "x"));
  EXPECT_TRUE(accepts(*g, "yc"));
  EXPECT_FALSE(accepts(*g, "y"));
}

TEST(Gbnf, Repetitions) {
  auto g = parse(R"(root ::= [0-9]{2,4} "-" [a]{3} "-" [b]{2,} "-" "c"{,2} "-" "d"?)");
  EXPECT_TRUE(accepts(*g, "12-aaa-bb--"));
  EXPECT_TRUE(accepts(*g, "1234-aaa-bbbbbbb-cc-d"));
  EXPECT_FALSE(accepts(*g, "1-aaa-bb--"));
  EXPECT_FALSE(accepts(*g, "12345-aaa-bb--"));
  EXPECT_FALSE(accepts(*g, "12-aa-bb--"));
  EXPECT_FALSE(accepts(*g, "12-aaa-b--"));
  EXPECT_FALSE(accepts(*g, "12-aaa-bb-ccc-"));
}

TEST(Gbnf, ClassesMatchUtf8CodePoints) {
  auto g = parse(R"(root ::= [^"\\\x00-\x1F]* "|" [α-ω]+ "|" . "|" [\u4E00-\u9FFF\U0001F600])");
  EXPECT_TRUE(accepts(*g, "h\xC3\xA9llo|\xCE\xB1\xCF\x89|x|\xE4\xB8\xAD"));
  EXPECT_TRUE(accepts(*g, "|\xCE\xB2|\xF0\x9F\x98\x80|\xF0\x9F\x98\x80"));
  EXPECT_FALSE(accepts(*g, "a\"b|\xCE\xB1|x|\xE4\xB8\xAD"));          // '"' is excluded
  EXPECT_FALSE(accepts(*g, "|a|x|\xE4\xB8\xAD"));                     // not Greek
  EXPECT_FALSE(accepts(*g, "\xC3|\xCE\xB1|x|\xE4\xB8\xAD"));          // a broken character
  EXPECT_FALSE(accepts(*g, "\xED\xA0\x80|\xCE\xB1|x|\xE4\xB8\xAD"));  // a surrogate
  EXPECT_FALSE(accepts(*g, "|\xCE\xB1|\xC0\x80|\xE4\xB8\xAD"));       // overlong
  EXPECT_TRUE(accepts_prefix(*g, "ab\xE4\xB8"));                      // mid-character
}

TEST(Gbnf, Utf8SequencesCoverExactlyTheRanges) {
  const std::vector<CodeRange> ranges = {
      {0x41, 0x5A}, {0x7F, 0x800}, {0xD000, 0xE000}, {0xFFF0, 0x10010}, {0x10FF00, 0x10FFFF}};
  auto seqs = utf8_sequences(ranges);
  auto in_ranges = [&](char32_t c) {
    if (c >= 0xD800 && c <= 0xDFFF) return false;
    for (auto [lo, hi] : ranges) {
      if (c >= lo && c <= hi) return true;
    }
    return false;
  };
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    std::uint8_t b[4];
    int n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n == 1) b[0] = static_cast<std::uint8_t>(c);
    if (n == 2) b[0] = static_cast<std::uint8_t>(0xC0 | (c >> 6));
    if (n == 3) b[0] = static_cast<std::uint8_t>(0xE0 | (c >> 12));
    if (n == 4) b[0] = static_cast<std::uint8_t>(0xF0 | (c >> 18));
    for (int i = 1; i < n; ++i) {
      b[i] = static_cast<std::uint8_t>(0x80 | ((c >> (6 * (n - 1 - i))) & 0x3F));
    }
    int hits = 0;
    for (const ByteSeq& s : seqs) {
      if (static_cast<int>(s.size()) != n) continue;
      bool all = true;
      for (int i = 0; i < n; ++i)
        all = all && b[i] >= s[static_cast<std::size_t>(i)].lo &&
              b[i] <= s[static_cast<std::size_t>(i)].hi;
      hits += all;
    }
    ASSERT_EQ(hits, in_ranges(c) ? 1 : 0) << std::hex << static_cast<std::uint32_t>(c);
  }
}

TEST(Gbnf, EscapesInLiteralsAndClasses) {
  auto g = parse(R"(root ::= "\"\\\n\t\x41\u00e9" [\]\-\[]+)");
  EXPECT_TRUE(accepts(*g, "\"\\\n\tA\xC3\xA9]-["));
  EXPECT_FALSE(accepts(*g, "\"\\\n\tA\xC3\xA9"));
}

TEST(Gbnf, RecursionThroughRules) {
  auto g = parse(R"(root ::= value
value ::= "[" ( value ("," value)* )? "]" | "0")");
  EXPECT_TRUE(accepts(*g, "[[0,[]],0,[[[[0]]]]]"));
  EXPECT_FALSE(accepts(*g, "[[0,[]],0,[[[[0]]]]"));
  EXPECT_FALSE(accepts(*g, "[0,]"));
  std::string deep(2000, '[');
  deep += std::string(2000, ']');
  EXPECT_TRUE(accepts(*g, deep));
}

TEST(Gbnf, ErrorsSayWhere) {
  EXPECT_EQ(parse_error("root ::= foo"),
            "grammar line 1, column 10: rule 'foo' is used but never defined");
  EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\""),
            "grammar line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(parse_error("root ::= \"abc"), "grammar line 1, column 10: unterminated literal");
  EXPECT_EQ(parse_error("root ::= [a-"), "grammar line 1, column 10: unterminated '['");
  EXPECT_EQ(parse_error("root ::= (\"a\""),
            "grammar line 1, column 14: expected ')' before the end");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "grammar line 1, column 14: unexpected ')'");
  // The fuzzer's stack overflow: thousands of open groups.
  EXPECT_EQ(parse_error("root ::= " + std::string(5000, '(')),
            "grammar line 1, column 1034: groups nest deeper than 1024 levels");
  EXPECT_TRUE(
      parse_gbnf("root ::= " + std::string(1024, '(') + "\"a\"" + std::string(1024, ')')).is_ok());
  EXPECT_EQ(parse_error("root ::= \"\\q\""), "grammar line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,2}"),
            "grammar line 1, column 13: repetition {3,2} has max below min");
  EXPECT_EQ(parse_error("root ::= \"a\"{20000}"),
            "grammar line 1, column 14: repetition bound past the limit of 10000");
  EXPECT_EQ(parse_error("root ::= [z-a]"),
            "grammar line 1, column 10: range out of order in a class");
  EXPECT_EQ(parse_error("root ::= \"a\" @"), "grammar line 1, column 14: unexpected character '@'");
  EXPECT_EQ(parse_error("root ::= \"\\x4\""),
            "grammar line 1, column 11: '\\x' needs 2 hex digits");
  EXPECT_EQ(parse_error("a ::= \"x\""), "grammar: no rule named 'root' (the start rule)");
  EXPECT_EQ(parse_error(""), "grammar: no rules");
  EXPECT_EQ(parse_error("::= \"x\""), "grammar line 1, column 1: expected a rule name, got ':'");
}

TEST(Gbnf, LeftRecursionIsAnError) {
  EXPECT_NE(parse_error("root ::= root \"a\" | \"b\"").find("rule 'root' is left-recursive"),
            std::string::npos);
  EXPECT_NE(
      parse_error("root ::= x \"a\" | \"c\"\nx ::= y? root\ny ::= \"b\"").find("left-recursive"),
      std::string::npos);
  EXPECT_NE(parse_error("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

TEST(Gbnf, BlowupIsBounded) {
  std::string wide = "root ::=";
  for (int i = 0; i < 200; ++i) wide += " \"a\"{10000}";
  EXPECT_NE(parse_error(wide).find("lowers to more than 1048576 elements"), std::string::npos);
}

TEST(Gbnf, EmptyClassMatchesNothing) {
  auto g = parse(R"(root ::= "a" [^\x00-\U0010FFFF] | "b")");
  EXPECT_FALSE(accepts_prefix(*g, "a"));
  EXPECT_TRUE(accepts(*g, "b"));
  auto loop = parse(R"(root ::= "a" x | "b"
x ::= "x" x)");  // x never ends
  EXPECT_FALSE(accepts_prefix(*loop, "a"));
  EXPECT_EQ(parse_error("root ::= \"a\" [^\\x00-\\U0010FFFF]"),
            "grammar: rule 'root' matches no string at all");
}

}  // namespace
}  // namespace recur::grammar
