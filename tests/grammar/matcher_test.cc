#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <random>

namespace recur::grammar {
namespace {

std::shared_ptr<const Grammar> parse(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return *g;
}

// A vocabulary with every byte, shared prefixes, duplicates, multi-byte characters split across
// tokens, and tokens that are never allowed (empty).
std::vector<std::string> test_vocab() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* t :
       {"{\"",  "\":",  "\",", "\"}",   "\"\"",     "true",     "tr",   "false", "null",
        "nul",  ", \"", "}}",  "]}",    "123",      "1.5e",     "-0",   "ab",    "abc",
        "abcd", "a\"",  "\\n", "\\u00", "\xC3\xA9", "\xE4\xB8", "\xAD", " {",    "\n  ",
        "[",    "[]",   "{}",  "abc",   "",         ""}) {
    v.emplace_back(t);
  }
  return v;
}

constexpr std::string_view kJson = R"(root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ":" ws value ws
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= ( " " | "\n" [ \t]{0,20} )?)";

// The mask must be exactly the tokens whose bytes keep the text a prefix of a sentence, checked
// token by token against the grammar itself, along random walks through the grammar.
TEST(Matcher, MaskIsExactlyTheTokensThatKeepAPrefix) {
  auto g = parse(kJson);
  auto vocab = std::make_shared<Vocabulary>(test_vocab());
  auto tg = std::make_shared<TokenGrammar>(g, vocab);
  std::mt19937 rng(7);
  for (int walk = 0; walk < 20; ++walk) {
    Matcher m(tg);
    std::string text;
    for (int step = 0; step < 60; ++step) {
      auto held = m.allowed();
      const auto& mask = *held;
      std::vector<std::int32_t> allowed;
      for (std::size_t id = 0; id < vocab->size(); ++id) {
        const bool bit = (mask[id >> 6] >> (id & 63)) & 1;
        const std::string& b = vocab->bytes(static_cast<std::int32_t>(id));
        const bool expect = !b.empty() && accepts_prefix(*g, text + b);
        ASSERT_EQ(bit, expect) << "walk " << walk << " text '" << text << "' token '" << b << "'";
        if (bit) allowed.push_back(static_cast<std::int32_t>(id));
      }
      EXPECT_EQ(m.is_complete(), accepts(*g, text));
      if (allowed.empty()) break;
      std::int32_t pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.accept(pick));
      text += vocab->bytes(pick);
    }
  }
  EXPECT_GT(tg->masks_computed(), 20u);
}

TEST(Matcher, RejectedTokensLeaveTheStateAlone) {
  auto g = parse(R"(root ::= "ab" "c"?)");
  auto vocab = std::make_shared<Vocabulary>(test_vocab());
  Matcher m(std::make_shared<TokenGrammar>(g, vocab));
  EXPECT_FALSE(m.accept('b'));
  EXPECT_FALSE(m.accept(static_cast<std::int32_t>(vocab->size()) - 1));  // empty bytes
  EXPECT_FALSE(m.accept(-1));
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept('a'));
  EXPECT_TRUE(m.allows('b'));
  EXPECT_FALSE(m.allows('c'));
  EXPECT_TRUE(m.accept('b'));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  EXPECT_TRUE(m.accept('c'));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());
  for (auto w : *m.allowed()) EXPECT_EQ(w, 0u);
}

// (a|b)* a (a|b){17}: a deterministic automaton needs 2^18 states. Past its state limit the
// automaton refuses to grow and says so, rather than taking the server's memory.
TEST(Matcher, AnAmbiguousGrammarStopsAtTheStateLimit) {
  auto g = parse(R"(root ::= [ab]* "a" [ab]{17})");
  Automaton a(g);
  std::mt19937 rng(5);
  auto s = a.start();
  for (int i = 0; i < 400000 && !a.overflowed(); ++i) {
    auto next = a.next(s, rng() % 2 ? 'a' : 'b');
    s = next == Automaton::kDead ? a.start() : next;
  }
  EXPECT_TRUE(a.overflowed());
  EXPECT_EQ(a.n_states(), Automaton::Limits{}.states);
  EXPECT_EQ(a.overflow(), "its automaton passed 65536 states");
}

// Forty nested rules, each two ways to the same nullable one: without merging the paths that meet,
// one byte's closure would walk 2^40 of them.
TEST(Matcher, NullablePathsThatMeetAreExpandedOnce) {
  std::string src = "root ::= n40 \"x\"\nn0 ::= \"y\"?\n";
  for (int k = 1; k <= 40; ++k) {
    src += "n" + std::to_string(k) + " ::= n" + std::to_string(k - 1) + " | \"\" n" +
           std::to_string(k - 1) + "\n";
  }
  auto g = parse(src);
  EXPECT_TRUE(accepts(*g, "x"));
  EXPECT_TRUE(accepts(*g, "yx"));
  EXPECT_FALSE(accepts(*g, "yyx"));
}

// s ::= "a" s s | "": after n bytes the parser holds n stacks, each deeper than the last, so the
// stacks summed over states grow with the square of the text. The limit ends it with its name.
TEST(Matcher, StacksThatGrowWithTheTextStopAtTheirLimit) {
  auto g = parse("root ::= s \"b\"\ns ::= \"a\" s s | \"\"\n");
  Automaton::Limits limits;
  limits.stack_entries = 1 << 14;
  Automaton a(g, limits);
  auto s = a.start();
  int steps = 0;
  while (s != Automaton::kDead && steps < 100000) {
    s = a.next(s, 'a');
    ++steps;
  }
  EXPECT_TRUE(a.overflowed());
  EXPECT_EQ(a.overflow(), "its automaton's parse stacks passed 16384 in all");
  EXPECT_LT(steps, 1000);
  // Refused for good: a transition not yet computed stays dead.
  EXPECT_EQ(a.next(a.start(), 'b'), Automaton::kDead);
}

TEST(Matcher, OneBytesClosureIsBounded) {
  std::string src = "root ::= (";
  for (int i = 0; i < 300; ++i)
    src += (i ? " | " : "") + std::string("\"w") + std::to_string(i) + "\"";
  src += ")\n";
  auto g = parse(src);
  Automaton::Limits limits;
  limits.expansion = 100;
  Automaton a(g, limits);
  EXPECT_TRUE(a.overflowed());
  EXPECT_EQ(a.overflow(), "one byte's step passed 100 parse positions");
  EXPECT_EQ(a.start(), Automaton::kDead);
  Automaton roomy(g);
  EXPECT_FALSE(roomy.overflowed());
  EXPECT_NE(roomy.walk(roomy.start(), "w299"), Automaton::kDead);
}

TEST(Matcher, VocabularyTrieHoldsEveryNonEmptyTokenOnce) {
  auto vocab = Vocabulary(test_vocab());
  const auto& t = vocab.trie();
  std::vector<int> seen(vocab.size(), 0);
  std::string path;
  for (std::size_t i = 0; i < t.byte.size(); ++i) {
    path.resize(t.depth[i] - 1u);
    path += static_cast<char>(t.byte[i]);
    EXPECT_GT(t.end[i], static_cast<std::int32_t>(i));
    for (std::int32_t k = t.tokens[i]; k < t.tokens[i + 1]; ++k) {
      EXPECT_EQ(vocab.bytes(t.token_ids[static_cast<std::size_t>(k)]), path);
      ++seen[static_cast<std::size_t>(t.token_ids[static_cast<std::size_t>(k)])];
    }
  }
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    EXPECT_EQ(seen[id], vocab.bytes(static_cast<std::int32_t>(id)).empty() ? 0 : 1) << id;
  }
}

}  // namespace
}  // namespace recur::grammar
