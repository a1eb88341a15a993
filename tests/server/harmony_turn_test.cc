// A harmony (gpt-oss) turn through the pieces ChatTurn runs it with, fed as the engine feeds them:
// tokens of a byte-level vocabulary with o200k_harmony's special tokens at their real ids, decoded
// with skip_special and the request's stop strings, the end token not a sample. MarkedText puts the
// markers back at their exact places (also when a stop string holds text back across one),
// ReplyParser takes the messages apart, TokenSections gives the content's logprobs and counts the
// reasoning tokens.
#include <gtest/gtest.h>

#include "../chat/harmony_tokenizer.h"
#include "server/marked_text.h"
#include "server/reply_parser.h"
#include "server/token_sections.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {
namespace {

using tokenizer::TokenId;
using tokenizer::Tokenizer;

constexpr TokenId kReturn = 200002, kCall = 200012;

const Tokenizer& harmony_tokenizer() { return test_support::harmony_tokenizer(); }

struct Turn {
  std::string marked;     // what the parser read
  std::string reasoning;  // streamed
  std::string content;    // streamed
  ParsedReply reply;
  std::string logprob_bytes;
  std::string logprob_texts;
  std::int64_t reasoning_tokens = 0;
  std::size_t n_samples = 0;
};

// The engine's side of a turn (engine_step.cc's on_sample): each sampled token through the
// detokenizer with skip_special and the stop strings; an end token ends the turn and is a sample
// only when it releases held-back text; events of `per_event` samples. Then ChatTurn's side.
Turn run_ids(const std::vector<TokenId>& ids, std::size_t per_event,
             std::vector<std::string> stops = {}, bool tools = true) {
  const Tokenizer& tok = harmony_tokenizer();
  tokenizer::StreamingDetokenizer detok(tok, stops, /*skip_special=*/true);
  MarkedText marked(tok, chat::kHarmonyMarkers);
  ReplyParser parser({.parse_tools = tools, .harmony = true});
  TokenSections sections;
  Turn t;
  std::vector<engine::SampleResult> samples;
  std::string text;
  auto flush = [&](bool done) {
    const std::string m = marked.push(samples, text, done);
    t.marked += m;
    ReplyPart part = parser.push(m, done);
    t.reasoning += part.reasoning;
    t.content += part.stream_content;
    for (const LogprobEntry& e : sections.push_marked(samples, marked.spans(), m,
                                                      parser.content_spans(), parser.settled())) {
      t.logprob_bytes += e.bytes;
      t.logprob_texts += e.text;
    }
    t.n_samples += samples.size();
    samples.clear();
    text.clear();
  };
  bool done = false;
  for (std::size_t i = 0; i < ids.size() && !done; ++i) {
    const TokenId id = ids[i];
    engine::SampleResult s{.id = id, .logprob = -0.25f};
    if (id == kReturn || id == kCall) {
      s.text = detok.finish();
      done = true;
    } else {
      s.text = detok.push(id);
      s.bytes = detok.bytes();
      done = detok.stopped();
      if (i + 1 == ids.size() && !done) s.text += detok.finish();  // max_tokens
    }
    text += s.text;
    if (!(id == kReturn || id == kCall) || !s.text.empty()) samples.push_back(std::move(s));
    if (samples.size() >= per_event || done || i + 1 == ids.size())
      flush(done || i + 1 == ids.size());
  }
  t.reply = parser.finish("", "call_");
  t.reasoning_tokens = sections.tokens_within(marked.spans(), parser.reasoning_spans());
  return t;
}

Turn run(std::string_view generated, std::size_t per_event, std::vector<std::string> stops = {},
         bool tools = true) {
  return run_ids(harmony_tokenizer().encode(generated, {.parse_special = true}), per_event,
                 std::move(stops), tools);
}

TEST(HarmonyTurn, AnalysisThenFinal) {
  const std::string text =
      "<|channel|>analysis<|message|>The user greets. Greet back.<|end|><|start|>assistant"
      "<|channel|>final<|message|>Hello! How can I help?<|return|>";
  for (std::size_t per_event : {1, 2, 5, 1000}) {
    Turn t = run(text, per_event);
    EXPECT_EQ(t.marked, text.substr(0, text.size() - 10)) << "the end token is no sample";
    EXPECT_EQ(t.reasoning, "The user greets. Greet back.");
    EXPECT_EQ(t.content, "Hello! How can I help?");
    ASSERT_TRUE(t.reply.reasoning.has_value());
    EXPECT_EQ(*t.reply.reasoning, "The user greets. Greet back.");
    EXPECT_EQ(t.reply.content, "Hello! How can I help?");
    EXPECT_TRUE(t.reply.tool_calls.empty());
    EXPECT_EQ(t.logprob_bytes, t.reply.content) << per_event;
    // The analysis message: <|channel|>, "analysis", <|message|>, its text and <|end|>.
    EXPECT_EQ(t.reasoning_tokens, static_cast<std::int64_t>(2 + 8 + 28 + 1)) << per_event;
  }
}

TEST(HarmonyTurn, AToolCall) {
  const std::string text =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>";
  for (std::size_t per_event : {1, 3, 1000}) {
    Turn t = run(text, per_event);
    EXPECT_EQ(t.content, "");
    ASSERT_EQ(t.reply.tool_calls.size(), 1u);
    EXPECT_EQ(t.reply.tool_calls[0].id, "call_0");
    EXPECT_EQ(t.reply.tool_calls[0].name, "get_weather");
    EXPECT_EQ(t.reply.tool_calls[0].arguments_json, R"({"city":"Oslo"})");
    EXPECT_EQ(t.reply.content, "");
    EXPECT_EQ(t.logprob_bytes, "");
  }
  // Without tools (tool_choice none) the call's text is content, held to the end.
  Turn off = run(text, 1, {}, /*tools=*/false);
  EXPECT_TRUE(off.reply.tool_calls.empty());
  EXPECT_EQ(off.reply.content, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(off.reply.unstreamed_content, "{\"city\": \"Oslo\"}");
}

TEST(HarmonyTurn, MaxTokensInsideACall) {
  Turn t = run("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": [1", 2);
  EXPECT_TRUE(t.reply.tool_calls.empty());
  EXPECT_EQ(t.reply.content, "{\"a\": [1");
  EXPECT_FALSE(t.reply.reasoning.has_value());
}

TEST(HarmonyTurn, AStopStringHeldAcrossAMarkerKeepsItsPlace) {
  // "X" may begin the stop string "XYZ": the engine holds it until "assistant" shows it is not,
  // while the markers between were already sampled.
  const std::string text =
      "<|channel|>analysis<|message|>Think X<|end|><|start|>assistant<|channel|>final"
      "<|message|>Answer X.<|return|>";
  for (std::size_t per_event : {1, 4}) {
    Turn t = run(text, per_event, {"XYZ"});
    EXPECT_EQ(t.marked, text.substr(0, text.size() - 10));
    EXPECT_EQ(t.reply.reasoning.value_or(""), "Think X");
    EXPECT_EQ(t.reply.content, "Answer X.");
    EXPECT_EQ(t.logprob_bytes, "Answer X.");
  }
}

TEST(HarmonyTurn, AStopStringEndsTheTurn) {
  const std::string text =
      "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>"
      "The code is 42 and more";
  Turn t = run(text, 1, {" and"});
  EXPECT_EQ(t.reply.content, "The code is 42");
  EXPECT_EQ(t.logprob_bytes, "The code is 42");
  // A stop string across markers (in the text the engine matches, they are not there) cuts them
  // off: they were never written.
  Turn across =
      run("<|channel|>analysis<|message|>Hmm ok<|end|><|start|>assistant<|channel|>final"
          "<|message|>Hi",
          1, {"okassistant"});
  EXPECT_EQ(across.marked, "<|channel|>analysis<|message|>Hmm ");
  EXPECT_EQ(across.reply.reasoning.value_or(""), "Hmm ");
  EXPECT_EQ(across.reply.content, "");
}

TEST(HarmonyTurn, MultiByteCharactersAcrossTokens) {
  const std::string text =
      "<|channel|>analysis<|message|>Ünïcödé 🦊<|end|><|start|>assistant<|channel|>final"
      "<|message|>Grüße 🦊!";
  Turn t = run(text, 3);
  EXPECT_EQ(t.marked, text);
  EXPECT_EQ(t.reply.reasoning.value_or(""), "Ünïcödé 🦊");
  EXPECT_EQ(t.reply.content, "Grüße 🦊!");
  EXPECT_EQ(t.logprob_bytes, "Grüße 🦊!");
}

// Issue 47: a stray byte token in the content (byte 0x80, GPT-2's "Ģ") is U+FFFD in the content
// and in its entry's text, and its raw byte in the entry's bytes.
TEST(HarmonyTurn, AStrayByteTokenReportsItsRawByte) {
  const Tokenizer& tok = harmony_tokenizer();
  std::vector<TokenId> ids = tok.encode("<|channel|>final<|message|>a", {.parse_special = true});
  ids.push_back(*tok.token_id("\xC4\xA2"));
  for (TokenId id : tok.encode("b")) ids.push_back(id);
  for (std::size_t per_event : {1, 3}) {
    Turn t = run_ids(ids, per_event);
    EXPECT_EQ(t.reply.content,
              "a\xEF\xBF\xBD"
              "b");
    EXPECT_EQ(t.logprob_texts, t.reply.content);
    EXPECT_EQ(t.logprob_bytes,
              "a\x80"
              "b");
  }
}

TEST(HarmonyTurn, MarkedTextSpansCoverEveryByte) {
  const std::string text =
      "<|channel|>analysis<|message|>ab<|end|><|start|>assistant<|channel|>final<|message|>cd";
  const Tokenizer& tok = harmony_tokenizer();
  const std::vector<TokenId> ids = tok.encode(text, {.parse_special = true});
  tokenizer::StreamingDetokenizer detok(tok, {}, true);
  MarkedText marked(tok, chat::kHarmonyMarkers);
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    engine::SampleResult s{.id = ids[i], .text = detok.push(ids[i])};
    const std::string t = s.text;
    out += marked.push(std::span(&s, 1), t, i + 1 == ids.size());
  }
  EXPECT_EQ(out, text);
  const auto& spans = marked.spans();
  ASSERT_EQ(spans.size(), ids.size());
  std::size_t at = 0;
  for (const chat::TextSpan& s : spans) {
    EXPECT_EQ(s.begin, at);
    at = s.end;
  }
  EXPECT_EQ(at, text.size());
}

}  // namespace
}  // namespace recur::server
