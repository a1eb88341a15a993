// gpt-oss's template through recur's formatter: conversations as clients send them render as
// Jinja2 renders them as the template takes them (harmony_goldens.json, make_harmony_goldens.py),
// and what the prompt cache is given across turns: the history boundary, the prefix a later turn
// shares with the tokens a reply generated (the template drops past analysis), the anticipated
// next-turn prefix.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/formatter.h"
#include "chat/harmony.h"
#include "harmony_tokenizer.h"

namespace recur::chat {
namespace {

using json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const ChatFormatter& gpt_oss() {
  static const ChatFormatter f = [] {
    auto made = ChatFormatter::create(
        test_support::harmony_tokenizer(),
        read_file(std::string(RECUR_SOURCE_DIR) +
                  "/tests/template/chat_templates/openai-gpt-oss-120b.jinja"));
    if (!made.is_ok()) std::abort();
    return std::move(made).value();
  }();
  return f;
}

// A client's message as server/ parses it.
Message message_of(const json& j) {
  Message m{.role = j["role"]};
  if (j["content"].is_string()) {
    m.content = j["content"].get<std::string>();
  } else if (j["content"].is_array()) {
    m.content_is_parts = true;
    for (const json& p : j["content"]) m.content_parts.push_back({.text = p["text"]});
  }
  if (j.contains("reasoning_content")) m.reasoning_content = j["reasoning_content"];
  for (const json& c : j.value("tool_calls", json::array())) {
    m.tool_calls.push_back(
        {.id = c["id"], .name = c["name"], .arguments_json = c["arguments"].dump()});
  }
  if (j.contains("tool_call_id")) m.tool_call_id = j["tool_call_id"];
  return m;
}

// strftime_now's date differs between the golden's fixed time and now.
// (Plain string search: std::regex trips GCC 12's -Wmaybe-uninitialized in the sanitizer build.)
std::string without_date(std::string s) {
  constexpr std::string_view kKey = "Current date: ";
  constexpr std::size_t kDate = 10;  // YYYY-MM-DD
  for (std::size_t at = s.find(kKey); at != std::string::npos; at = s.find(kKey, at + 1)) {
    const std::size_t d = at + kKey.size();
    if (d + kDate <= s.size() && s[d + 4] == '-' && s[d + 7] == '-') s.replace(d, kDate, "D");
  }
  return s;
}

TEST(FormatterHarmony, RendersAsJinja2) {
  const json cases =
      json::parse(read_file(std::string(RECUR_SOURCE_DIR) + "/tests/chat/harmony_goldens.json"));
  ASSERT_GE(cases.size(), 10u);
  for (const json& c : cases) {
    std::vector<Message> msgs;
    for (const json& m : c["messages"]) msgs.push_back(message_of(m));
    const std::string tools = c["tools"].is_null() ? "" : c["tools"].dump();
    const std::string kwargs = c["kwargs"].is_null() ? "" : c["kwargs"].dump();
    auto text = gpt_oss().render({.messages = msgs, .tools_json = tools, .kwargs_json = kwargs},
                                 c["add_generation_prompt"].get<bool>());
    ASSERT_TRUE(text.is_ok()) << c["name"] << ": " << text.status().to_string();
    EXPECT_EQ(without_date(*text), without_date(c["expected"])) << c["name"];
  }
}

TEST(FormatterHarmony, IsHarmonyNotThinkTags) {
  EXPECT_TRUE(gpt_oss().harmony());
  EXPECT_FALSE(gpt_oss().has_reasoning());
  EXPECT_TRUE(gpt_oss().caps().thinking_key);
  auto p =
      gpt_oss().build_prompt({.messages = std::vector<Message>{{.role = "user", .content = "Hi"}}});
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(p->text.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant"));
  EXPECT_EQ(harmony_prompt_tail(p->text), "assistant");
  EXPECT_FALSE(p->starts_in_reasoning);
}

std::vector<TokenId> encode(std::string_view text) {
  return test_support::harmony_tokenizer().encode(text, {.parse_special = true});
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// What the cache gets across turns: the next turn re-renders the reply without its analysis, so
// its prompt leaves the generated tokens right after the reply's first <|channel|>; the warm-up's
// anticipated prefix is all of the next prompt but the new message and the generation prompt.
TEST(FormatterHarmony, NextTurnAfterAnAnswer) {
  const std::vector<Message> turn1 = {{.role = "system", .content = "Be brief."},
                                      {.role = "user", .content = "What is 2+2?"}};
  auto p1 = gpt_oss().build_prompt({.messages = turn1});
  ASSERT_TRUE(p1.is_ok());
  // Without a generation prompt the history ends before "<|start|>assistant".
  const auto gen_prompt = static_cast<std::int64_t>(encode("<|start|>assistant").size());
  EXPECT_EQ(p1->history_boundary, static_cast<std::int64_t>(p1->tokens.size()) - gen_prompt);
  const std::vector<TokenId> generated = encode(
      "<|channel|>analysis<|message|>Simple.<|end|><|start|>assistant<|channel|>final<|message|>"
      "4.<|return|>");
  Message reply{.role = "assistant", .content = "4.", .reasoning_content = "Simple."};
  const std::vector<TokenId> prefix = gpt_oss().next_turn_prefix({.messages = turn1}, reply);
  std::vector<Message> turn2 = turn1;
  turn2.push_back(reply);
  turn2.push_back({.role = "user", .content = "And 3+3?"});
  auto p2 = gpt_oss().build_prompt({.messages = turn2});
  ASSERT_TRUE(p2.is_ok());
  EXPECT_EQ(common_prefix(concat(p1->tokens, generated), p2->tokens),
            static_cast<std::int64_t>(p1->tokens.size()) + 1)
      << "the turn shares the prompt and the reply's first <|channel|>";
  EXPECT_EQ(concat(prefix, encode("And 3+3?<|end|><|start|>assistant")), p2->tokens);
  EXPECT_EQ(p2->history_boundary, static_cast<std::int64_t>(p2->tokens.size()) - gen_prompt);
}

// After a tool call the analysis stays (no final answer follows it yet): the next prompt shares
// the generated tokens through the analysis message and the next message's "<|start|>assistant".
TEST(FormatterHarmony, NextTurnAfterAToolCall) {
  const std::string tools =
      R"([{"type":"function","function":{"name":"get_weather","description":"Weather.",)"
      R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";
  const std::vector<Message> turn1 = {{.role = "user", .content = "Weather in Oslo?"}};
  auto p1 = gpt_oss().build_prompt({.messages = turn1, .tools_json = tools});
  ASSERT_TRUE(p1.is_ok());
  const std::string analysis =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant";
  const std::vector<TokenId> generated =
      encode(analysis +
             "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
             "{\"city\":\"Oslo\"}<|call|>");
  Message reply{.role = "assistant", .content = "", .reasoning_content = "Need weather."};
  reply.tool_calls.push_back(
      {.id = "call_0", .name = "get_weather", .arguments_json = R"({"city":"Oslo"})"});
  const std::vector<TokenId> prefix =
      gpt_oss().next_turn_prefix({.messages = turn1, .tools_json = tools}, reply);
  std::vector<Message> turn2 = turn1;
  turn2.push_back(reply);
  turn2.push_back({.role = "tool", .content = "sunny", .tool_call_id = "call_0"});
  auto p2 = gpt_oss().build_prompt({.messages = turn2, .tools_json = tools});
  ASSERT_TRUE(p2.is_ok());
  EXPECT_EQ(common_prefix(concat(p1->tokens, generated), p2->tokens),
            static_cast<std::int64_t>(p1->tokens.size() + encode(analysis).size()));
  // The result is a JSON string (tojson): its opening quote is in the prefix.
  EXPECT_EQ(concat(prefix, encode("sunny\"<|end|><|start|>assistant")), p2->tokens);
}

}  // namespace
}  // namespace recur::chat
