// The harmony parser on every message shape gpt-oss writes, fed whole, byte by byte and in random
// pieces (all must agree), cut short as max_tokens cuts it, and on malformed input.
#include "chat/harmony.h"

#include <gtest/gtest.h>

#include <random>

namespace recur::chat {
namespace {

using Kind = HarmonyMessage::Kind;

struct Parsed {
  std::string reasoning, content;
  std::vector<HarmonyMessage> messages;
  std::vector<TextSpan> content_spans;
  bool saw_reasoning = false;
};

// Whether `s` holds a marker. (Bytes a stream sends are never part of one: a possible marker is
// held until it is known; APartialMarkerIsHeldUntilItIsKnown checks the holding.)
bool has_marker(std::string_view s) {
  for (std::string_view m : kHarmonyMarkers) {
    if (s.find(m) != std::string_view::npos) return true;
  }
  return false;
}

// Feeds `text` in pieces of `sizes` (cycled); no delta shows a marker.
Parsed parse(std::string_view text, const std::vector<std::size_t>& sizes,
             std::string_view tail = "assistant") {
  HarmonyParser p(tail);
  Parsed out;
  std::size_t at = 0, i = 0;
  while (at < text.size()) {
    const std::size_t n = std::min(sizes[i++ % sizes.size()], text.size() - at);
    HarmonyDelta d = p.push(text.substr(at, n));
    for (const std::string* s : {&d.reasoning, &d.content}) EXPECT_FALSE(has_marker(*s)) << *s;
    EXPECT_LE(p.settled(), at + n);
    out.reasoning += d.reasoning;
    out.content += d.content;
    at += n;
  }
  HarmonyDelta d = p.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  out.messages = p.messages();
  out.content_spans = p.content_spans();
  out.saw_reasoning = p.saw_reasoning();
  return out;
}

// Whole, byte by byte and in seeded random pieces: all the same.
Parsed parse_every_way(std::string_view text, std::string_view tail = "assistant") {
  Parsed whole = parse(text, {text.size() + 1}, tail);
  std::vector<std::vector<std::size_t>> ways = {{1}, {2}, {3}, {7}};
  std::mt19937 rng(42);
  for (int r = 0; r < 5; ++r) {
    std::vector<std::size_t> sizes;
    for (int k = 0; k < 16; ++k)
      sizes.push_back(std::uniform_int_distribution<std::size_t>(1, 12)(rng));
    ways.push_back(sizes);
  }
  for (const auto& sizes : ways) {
    Parsed p = parse(text, sizes, tail);
    EXPECT_EQ(p.reasoning, whole.reasoning) << text;
    EXPECT_EQ(p.content, whole.content) << text;
    EXPECT_EQ(p.content_spans, whole.content_spans) << text;
    EXPECT_EQ(p.messages.size(), whole.messages.size()) << text;
    for (std::size_t i = 0; i < std::min(p.messages.size(), whole.messages.size()); ++i) {
      EXPECT_EQ(p.messages[i].body, whole.messages[i].body);
      EXPECT_EQ(p.messages[i].span, whole.messages[i].span);
      EXPECT_EQ(p.messages[i].kind, whole.messages[i].kind);
    }
  }
  return whole;
}

// What the content spans cover of the input, joined.
std::string spanned(std::string_view text, const std::vector<TextSpan>& spans) {
  std::string out;
  for (const TextSpan& s : spans) out += text.substr(s.begin, s.end - s.begin);
  return out;
}

TEST(Harmony, AnalysisThenFinal) {
  for (std::string end : {"<|return|>", ""}) {  // the stop token is not text: usually absent
    const std::string text =
        "<|channel|>analysis<|message|>User asks 2+2. Simple.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4." +
        end;
    Parsed p = parse_every_way(text);
    EXPECT_EQ(p.reasoning, "User asks 2+2. Simple.");
    EXPECT_EQ(p.content, "2 + 2 = 4.");
    EXPECT_TRUE(p.saw_reasoning);
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].kind, Kind::kReasoning);
    EXPECT_EQ(p.messages[0].channel, "analysis");
    EXPECT_TRUE(p.messages[0].ended);
    EXPECT_EQ(p.messages[0].span, (TextSpan{0, text.find("<|start|>")}));
    EXPECT_EQ(p.messages[1].kind, Kind::kContent);
    EXPECT_EQ(p.messages[1].channel, "final");
    EXPECT_EQ(p.messages[1].ended, !end.empty());
    EXPECT_EQ(p.messages[1].span, (TextSpan{text.find("<|start|>"), text.size()}));
    EXPECT_EQ(spanned(text, p.content_spans), "2 + 2 = 4.");
  }
}

TEST(Harmony, ToolCallWithTheRecipientInTheChannel) {
  const std::string text =
      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>"
      "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>";
  Parsed p = parse_every_way(text);
  EXPECT_EQ(p.reasoning, "Need the weather.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.messages.size(), 2u);
  const HarmonyMessage& call = p.messages[1];
  EXPECT_EQ(call.kind, Kind::kToolCall);
  EXPECT_EQ(call.channel, "commentary");
  EXPECT_EQ(call.recipient, "functions.get_weather");
  EXPECT_EQ(call.content_type, "json");
  EXPECT_EQ(call.body, "{\"city\":\"Oslo\"}");
  EXPECT_TRUE(call.ended);
  EXPECT_TRUE(p.content_spans.empty());
}

TEST(Harmony, ToolCallWithTheRecipientAfterTheRole) {
  const std::string text =
      "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.get_weather"
      "<|channel|>commentary json<|message|>{\"city\": \"Oslo\"}<|call|>";
  Parsed p = parse_every_way(text);
  ASSERT_EQ(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[1].kind, Kind::kToolCall);
  EXPECT_EQ(p.messages[1].recipient, "functions.get_weather");
  EXPECT_EQ(p.messages[1].channel, "commentary");
  EXPECT_EQ(p.messages[1].content_type, "json");
  EXPECT_EQ(p.messages[1].body, "{\"city\": \"Oslo\"}");
}

TEST(Harmony, ToolCallAsTheFirstMessage) {
  // The generation prompt wrote the role; the model goes on with the recipient.
  Parsed p =
      parse_every_way(" to=functions.ls<|channel|>commentary <|constrain|>json<|message|>{}");
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].kind, Kind::kToolCall);
  EXPECT_EQ(p.messages[0].recipient, "functions.ls");
  EXPECT_EQ(p.messages[0].body, "{}");
  EXPECT_FALSE(p.messages[0].ended);
  EXPECT_FALSE(p.saw_reasoning);
}

TEST(Harmony, PreambleIsContentAndBodiesJoin) {
  const std::string text =
      "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>analysis<|message|>"
      "More plan.<|end|><|start|>assistant<|channel|>commentary<|message|>I will look it up."
      "<|end|><|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
      "<|message|>{\"q\":\"x\"}<|call|>";
  Parsed p = parse_every_way(text);
  EXPECT_EQ(p.reasoning, "Plan.\nMore plan.");
  EXPECT_EQ(p.content, "I will look it up.");
  ASSERT_EQ(p.messages.size(), 4u);
  EXPECT_EQ(p.messages[2].kind, Kind::kContent);
  EXPECT_EQ(p.messages[3].kind, Kind::kToolCall);
  EXPECT_EQ(spanned(text, p.content_spans), "I will look it up.");
}

TEST(Harmony, BuiltInToolsInTheAnalysisChannelAreReasoning) {
  Parsed p = parse_every_way("<|channel|>analysis to=python code<|message|>print(1)<|call|>");
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0].kind, Kind::kReasoning);
  EXPECT_EQ(p.reasoning, "print(1)");
  // A function called from the analysis channel is still a call.
  Parsed f = parse_every_way("<|channel|>analysis to=functions.f<|message|>{}<|call|>");
  EXPECT_EQ(f.messages[0].kind, Kind::kToolCall);
}

TEST(Harmony, CutByMaxTokens) {
  Parsed in_analysis = parse_every_way("<|channel|>analysis<|message|>Still thinking ab");
  EXPECT_EQ(in_analysis.reasoning, "Still thinking ab");
  EXPECT_EQ(in_analysis.content, "");
  EXPECT_FALSE(in_analysis.messages[0].ended);

  Parsed in_final = parse_every_way(
      "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>Half an");
  EXPECT_EQ(in_final.content, "Half an");

  // In a header: nothing of it is text.
  for (std::string cut : {"<|start|>", "<|start|>assist", "<|start|>assistant<|channel|>fin",
                          "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>",
                          "<|start|>assistant to=functions.f"}) {
    Parsed p = parse_every_way("<|channel|>analysis<|message|>a<|end|>" + cut);
    EXPECT_EQ(p.reasoning, "a") << cut;
    EXPECT_EQ(p.content, "") << cut;
    EXPECT_EQ(p.messages.size(), 1u) << cut;
  }
  Parsed cut_marker = parse_every_way("<|channel|>final<|message|>Done<|en");
  EXPECT_EQ(cut_marker.content, "Done<|en");  // at the end a partial marker is text after all

  Parsed in_call = parse_every_way(
      "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": [1, 2");
  ASSERT_EQ(in_call.messages.size(), 1u);
  EXPECT_EQ(in_call.messages[0].kind, Kind::kToolCall);
  EXPECT_EQ(in_call.messages[0].body, "{\"a\": [1, 2");
  EXPECT_FALSE(in_call.messages[0].ended);
  EXPECT_EQ(in_call.content, "");
}

TEST(Harmony, MalformedInputStaysText) {
  // No header at all: the model wrote plain text after the generation prompt.
  Parsed plain = parse_every_way("Hello there, no channel.");
  EXPECT_EQ(plain.content, "Hello there, no channel.");
  EXPECT_EQ(plain.reasoning, "");
  EXPECT_EQ(spanned("Hello there, no channel.", plain.content_spans), "Hello there, no channel.");

  // Text right after the role is text too, unless it reads as a recipient or content type.
  Parsed spaced = parse_every_way(" Hello there.<|end|>");
  EXPECT_EQ(spaced.content, " Hello there.");
  HarmonyParser streamed;
  EXPECT_EQ(streamed.push(" Hello").content, " Hello");  // streams as soon as it is no header
  Parsed typed = parse_every_way(" to=functions.f json<|end|>");
  EXPECT_EQ(typed.content, "");

  Parsed unknown = parse_every_way("<|channel|>weird<|message|>Some text.<|end|>");
  EXPECT_EQ(unknown.content, "Some text.");

  Parsed no_channel = parse_every_way("<|message|>Bare body.");
  EXPECT_EQ(no_channel.content, "Bare body.");

  const std::string between =
      "<|channel|>analysis<|message|>r<|end|>\n  stray words <|start|>assistant<|channel|>final"
      "<|message|>ok";
  Parsed b = parse_every_way(between);
  EXPECT_EQ(b.reasoning, "r");
  EXPECT_EQ(b.content, "\n  stray words \nok");
  EXPECT_EQ(spanned(between, b.content_spans), "\n  stray words ok");

  // Only whitespace between messages is dropped.
  Parsed ws = parse_every_way(
      "<|channel|>analysis<|message|>r<|end|>\n\n<|start|>assistant<|channel|>final<|message|>ok");
  EXPECT_EQ(ws.content, "ok");

  // Marker-like text that is no marker, and stray markers inside a body.
  Parsed lookalike = parse_every_way("<|channel|>final<|message|>a <| b < c <|x|> d<|constrain|>e");
  EXPECT_EQ(lookalike.content, "a <| b < c <|x|> de");

  // A new message without <|end|><|start|>assistant before it.
  Parsed skipped =
      parse_every_way("<|channel|>analysis<|message|>think<|channel|>final<|message|>answer");
  EXPECT_EQ(skipped.reasoning, "think");
  EXPECT_EQ(skipped.content, "answer");

  // The model imitating a tool's reply: its text is content, not a call.
  Parsed imitation = parse_every_way(
      "<|channel|>final<|message|>a<|end|><|start|>functions.f to=assistant<|channel|>commentary"
      "<|message|>{\"r\":1}<|end|>");
  EXPECT_EQ(imitation.content, "a\n{\"r\":1}");
  EXPECT_EQ(imitation.messages[1].kind, Kind::kContent);

  // A header that ends before its body.
  Parsed headless = parse_every_way("<|channel|>final<|end|><|start|>assistant<|return|>");
  EXPECT_EQ(headless.content, "");
  EXPECT_TRUE(headless.messages.empty());

  // Nothing at all.
  Parsed empty = parse_every_way("");
  EXPECT_EQ(empty.content, "");
  EXPECT_TRUE(empty.messages.empty());
}

TEST(Harmony, APartialMarkerIsHeldUntilItIsKnown) {
  HarmonyParser p;
  EXPECT_EQ(p.push("<|channel|>final<|message|>Hi").content, "Hi");
  EXPECT_EQ(p.push(" <").content, " ");
  EXPECT_EQ(p.push("|e").content, "");
  EXPECT_EQ(p.push("nd").content, "");
  EXPECT_EQ(p.push("|>").content, "");
  EXPECT_EQ(p.push("<|start|>assistant<|channel|>final<|message|>x").content, "\nx");
  EXPECT_EQ(p.push("<|fo").content, "<|fo");  // no marker starts so
  EXPECT_EQ(p.push("<|cha").content, "");
  EXPECT_EQ(p.push("nnel|>").content, "");
  EXPECT_EQ(p.finish().content, "");
}

TEST(Harmony, PrefilledHeaderStartsInTheBody) {
  Parsed final_body =
      parse_every_way(" and more.<|return|>", "assistant<|channel|>final<|message|>Some");
  EXPECT_EQ(final_body.content, " and more.");
  ASSERT_EQ(final_body.messages.size(), 1u);
  EXPECT_EQ(final_body.messages[0].span, (TextSpan{0, 20}));
  EXPECT_EQ(final_body.content_spans, (std::vector<TextSpan>{{0, 10}}));

  Parsed call = parse_every_way(
      "{\"city\":\"Oslo\"}",
      "assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>");
  ASSERT_EQ(call.messages.size(), 1u);
  EXPECT_EQ(call.messages[0].kind, Kind::kToolCall);
  EXPECT_EQ(call.messages[0].body, "{\"city\":\"Oslo\"}");
}

TEST(Harmony, SettledStopsAtAHeaderThatMayBeText) {
  HarmonyParser p;
  p.push("<|channel|>analysis<|message|>abc<|end|><|start|>");
  const std::size_t before = p.settled();
  p.push("assistant");
  EXPECT_EQ(p.settled(), before);
  p.push("<|channel|>final<|message|>");
  EXPECT_EQ(p.settled(), std::string_view("<|channel|>analysis<|message|>abc<|end|><|start|>"
                                          "assistant<|channel|>final<|message|>")
                             .size());
}

// Random soups of markers, header words and text: whole, byte by byte and in pieces the parser
// agrees with itself, never sends a marker, never loses its place, never crashes.
TEST(Harmony, RandomInputIsAlwaysParsed) {
  const std::vector<std::string> atoms = {"<|start|>",
                                          "<|end|>",
                                          "<|message|>",
                                          "<|channel|>",
                                          "<|constrain|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "assistant",
                                          "analysis",
                                          "final",
                                          "commentary",
                                          " to=functions.f",
                                          " json",
                                          "functions.g",
                                          " to=assistant",
                                          "Hello",
                                          " world",
                                          "\n",
                                          " ",
                                          "<",
                                          "<|",
                                          "|>",
                                          "{\"a\":1}",
                                          "<|chan",
                                          "user"};
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
    Parsed p = parse_every_way(text);
    for (const TextSpan& sp : p.content_spans) {
      ASSERT_LE(sp.begin, sp.end);
      ASSERT_LE(sp.end, text.size()) << text;
    }
    for (const HarmonyMessage& m : p.messages) ASSERT_LE(m.span.begin, m.span.end) << text;
    if (HasFailure()) {
      ADD_FAILURE() << "input: " << text;
      return;
    }
  }
}

TEST(Harmony, TemplateDetection) {
  EXPECT_TRUE(is_harmony_template("{{- '<|start|>assistant<|channel|>final<|message|>' }}"));
  EXPECT_FALSE(is_harmony_template("<|im_start|>assistant\n<think>\n"));
}

}  // namespace
}  // namespace recur::chat
