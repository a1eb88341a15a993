#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <random>

namespace recur::chat {
namespace {

SplitText split_in_pieces(bool starts_in_reasoning, const std::string& text, std::mt19937& rng) {
  ReasoningSplitter s(starts_in_reasoning);
  SplitText all;
  size_t i = 0;
  while (i < text.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 4)(rng);
    auto part = s.push(std::string_view(text).substr(i, n));
    all.reasoning += part.reasoning;
    all.content += part.content;
    i += n;
  }
  auto end = s.finish();
  all.reasoning += end.reasoning;
  all.content += end.content;
  return all;
}

TEST(ReasoningSplitter, SplitsAndTrimsLikeTheTemplate) {
  struct Case {
    bool starts_in;
    std::string text, reasoning, content;
  };
  const Case cases[] = {
      {true, "\nLet me think.\nMore.\n</think>\n\nThe answer.", "Let me think.\nMore.",
       "The answer."},
      {false, "<think>\nhmm\n</think>\n\nHi", "hmm", "Hi"},
      {false, "Plain answer\n\nwith lines\n", "", "Plain answer\n\nwith lines\n"},
      {true, "never closed\n\n", "never closed", ""},
      {true, "a </thinker> b</think>c", "a </thinker> b", "c"},
      {false, "<thin is not a tag", "", "<thin is not a tag"},
      {true, "</think>\n\nOnly content", "", "Only content"},
  };
  std::mt19937 rng(1);
  for (const auto& c : cases) {
    for (int rep = 0; rep < 20; ++rep) {
      SplitText got = split_in_pieces(c.starts_in, c.text, rng);
      EXPECT_EQ(got.reasoning, c.reasoning) << c.text;
      EXPECT_EQ(got.content, c.content) << c.text;
    }
  }
}

TEST(ReasoningSplitter, NeverEmitsAPartialTag) {
  ReasoningSplitter s(true);
  auto a = s.push("abc</th");
  EXPECT_EQ(a.reasoning, "abc");
  auto b = s.push("ink>x");
  EXPECT_EQ(b.reasoning, "");
  EXPECT_EQ(b.content, "x");
  EXPECT_TRUE(s.saw_reasoning());
}

}  // namespace
}  // namespace recur::chat
