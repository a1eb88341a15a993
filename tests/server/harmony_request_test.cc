// What gpt-oss's harmony format makes of a request's constraints: a forced call's header and an
// output format's final-message header end the prompt (a grammar cannot write special tokens), and
// the grammar is the call's arguments; tool_choice none and strict tools under auto constrain
// nothing (the parser keeps a call as text when tools are off).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/openai_request.h"
#include "server/tool_choice_grammar.h"

namespace recur::server {
namespace {

const RequestLimits kLimits;

ChatRequest chat(const std::string& extra) {
  const std::string body =
      R"({"messages": [{"role": "user", "content": "x"}], "tools": [)"
      R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",)"
      R"( "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])" +
      extra + "}";
  auto r = parse_chat_request(body, kLimits);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<ChatRequest>(r);
}

std::string gpt_oss_template() {
  std::ifstream f(std::string(RECUR_SOURCE_DIR) +
                  "/tests/template/chat_templates/openai-gpt-oss-120b.jinja");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string prefill(const ChatRequest& r) {
  auto p = harmony_prefill(r);
  if (auto* e = std::get_if<ApiError>(&p)) return "error: " + e->message;
  return std::get<std::string>(p);
}

TEST(HarmonyRequest, TheTemplateIsHarmonys) {
  EXPECT_EQ(call_syntax(gpt_oss_template()), CallSyntax::kHarmony);
}

TEST(HarmonyRequest, AForcedCallEndsThePromptWithItsHeader) {
  const std::string header =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>";
  EXPECT_EQ(prefill(chat(R"(, "tool_choice": "required")")), header);
  EXPECT_EQ(prefill(chat(R"(, "tool_choice": {"type": "function", "function": {"name":)"
                         R"( "get_weather"}})")),
            header);
  EXPECT_EQ(prefill(chat("")), "");
  EXPECT_EQ(prefill(chat(R"(, "tool_choice": "auto")")), "");
  EXPECT_EQ(prefill(chat(R"(, "tool_choice": "none")")), "");
  // The grammar is the arguments alone.
  auto g = forced_tool_call_gbnf(chat(R"(, "tool_choice": "required")"), CallSyntax::kHarmony);
  ASSERT_TRUE(std::holds_alternative<std::string>(g));
  EXPECT_TRUE(std::get<std::string>(g).starts_with("root ::= t0-root\n"));
  EXPECT_NE(std::get<std::string>(g).find("city"), std::string::npos);
  // Nothing to forbid or constrain in a free reply.
  for (const char* choice : {R"(, "tool_choice": "none")", R"(, "tool_choice": "auto")", ""}) {
    auto free = forced_tool_call_gbnf(chat(choice), CallSyntax::kHarmony);
    ASSERT_TRUE(std::holds_alternative<std::string>(free));
    EXPECT_EQ(std::get<std::string>(free), "") << choice;
  }
}

TEST(HarmonyRequest, RequiredWithSeveralToolsCannotBeForced) {
  ChatRequest r = chat(R"(, "tool_choice": "required")");
  r.tools_json =
      R"([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}])";
  EXPECT_TRUE(
      prefill(r).starts_with("error: gpt-oss's harmony format can force a call only of "
                             "one named function"));
  auto g = forced_tool_call_gbnf(r, CallSyntax::kHarmony);
  ASSERT_TRUE(std::holds_alternative<ApiError>(g));
  EXPECT_EQ(std::get<ApiError>(g).param, "tool_choice");
  // Naming one of them is fine.
  r.tool_choice_json = R"({"type":"function","function":{"name":"b"}})";
  EXPECT_EQ(prefill(r), "<|channel|>commentary to=functions.b <|constrain|>json<|message|>");
}

TEST(HarmonyRequest, AnOutputFormatIsTheFinalMessage) {
  ChatRequest r = chat(R"(, "response_format": {"type": "json_object"})");
  EXPECT_EQ(prefill(r), "<|channel|>final<|message|>");
  r.continue_final_message = true;  // the prompt ends inside the client's message
  EXPECT_EQ(prefill(r), "");
}

}  // namespace
}  // namespace recur::server
