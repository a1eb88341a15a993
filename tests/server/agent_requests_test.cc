// What coding agents send beyond plain chat, as the three parsers read it: hosted tools left out
// (or refused), Codex's namespace tools, item_reference inputs and Anthropic cache_control
// breakpoints.
#include <gtest/gtest.h>

#include "server/anthropic_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace recur::server {
namespace {

template <typename T>
T accepted(const Parsed<T>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << e->param << ": " << e->message;
    return {};
  }
  return std::get<T>(r);
}

template <typename T>
ApiError refused(const Parsed<T>& r) {
  if (std::holds_alternative<T>(r)) {
    ADD_FAILURE() << "accepted";
    return {};
  }
  return std::get<ApiError>(r);
}

const RequestLimits kLeaveOut;
const RequestLimits kReject{.unsupported_tools = UnsupportedTools::kReject};

TEST(UnsupportedTools, ResponsesHostedToolsAreLeftOutAndNamed) {
  const std::string body = R"({"input": "x", "tools": [
      {"type": "web_search", "external_web_access": false},
      {"type": "function", "name": "f", "parameters": {"type": "object"}},
      {"type": "mcp", "server_label": "github", "server_url": "https://example.invalid"},
      {"type": "file_search", "vector_store_ids": []}, {"type": "web_search"}]})";
  ResponsesRequest r = accepted(parse_responses_request(body, kLeaveOut));
  EXPECT_EQ(r.chat.tools_json,
            R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])");
  EXPECT_EQ(r.chat.dropped_tools,
            (std::vector<std::string>{"web_search", "mcp:github", "file_search", "web_search"}));
  EXPECT_EQ(dropped_tools_header(r.chat.dropped_tools), "web_search, mcp:github, file_search");

  ApiError e = refused(parse_responses_request(body, kReject));
  EXPECT_EQ(e.param, "tools[0].type");
  EXPECT_EQ(e.code, "unsupported_tool");
  EXPECT_NE(e.message.find("web_search"), std::string::npos) << e.message;
}

TEST(UnsupportedTools, ChatCompletionsAndMessagesLeaveOutWhatIsNotAFunction) {
  ChatRequest chat = accepted(parse_chat_request(
      R"({"messages": [{"role": "user", "content": "x"}], "tools": [
          {"type": "custom", "custom": {"name": "apply_patch"}},
          {"type": "function", "function": {"name": "f"}}]})",
      kLeaveOut));
  EXPECT_EQ(chat.tools_json, R"([{"function":{"name":"f"},"type":"function"}])");
  EXPECT_EQ(chat.dropped_tools, std::vector<std::string>{"custom"});
  EXPECT_EQ(refused(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
                                           "tools": [{"type": "custom"}]})",
                                       kReject))
                .param,
            "tools[0].type");

  const std::string anthropic = R"({"messages": [{"role": "user", "content": "x"}], "tools": [
      {"name": "get", "input_schema": {"type": "object"}},
      {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
      {"type": "bash_20250124", "name": "bash"}]})";
  ChatRequest m = accepted(parse_messages_request(anthropic, kLeaveOut));
  EXPECT_EQ(m.tools_json,
            R"([{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}])");
  EXPECT_EQ(m.dropped_tools, (std::vector<std::string>{"web_search_20250305", "bash_20250124"}));
  EXPECT_EQ(refused(parse_messages_request(anthropic, kReject)).param, "tools[1].type");
}

TEST(UnsupportedTools, HeaderValueIsOnePrintableLine) {
  EXPECT_EQ(dropped_tools_header({"mcp:a\r\nX-Evil: 1", "b,c"}), "mcp:a__X-Evil: 1, b_c");
  EXPECT_EQ(dropped_tools_header({}), "");
}

TEST(NamespaceTools, AreOfferedFlatAndEchoedCallsFlattenTheSameWay) {
  ResponsesRequest r = accepted(parse_responses_request(R"({"input": [
      {"role": "user", "content": "x"},
      {"type": "function_call", "call_id": "c", "name": "spawn_agent",
       "namespace": "multi_agent_v1", "arguments": "{}"},
      {"type": "function_call", "call_id": "d", "name": "read", "namespace": "mcp__fs__",
       "arguments": "{}"}],
    "tools": [{"type": "namespace", "name": "multi_agent_v1", "description": "Agents.",
               "tools": [{"type": "function", "name": "spawn_agent"},
                         {"type": "custom", "name": "free"}]},
              {"type": "namespace", "name": "mcp__fs__", "tools": [{"type": "function",
                                                                   "name": "read"}]}]})",
                                                        kLeaveOut));
  EXPECT_EQ(r.chat.tools_json,
            R"([{"type":"function","function":{"name":"multi_agent_v1__spawn_agent"}},)"
            R"({"type":"function","function":{"name":"mcp__fs__read"}}])");
  ASSERT_EQ(r.namespaced.size(), 2u);
  EXPECT_EQ(r.namespaced[0].flat, "multi_agent_v1__spawn_agent");
  EXPECT_EQ(r.namespaced[0].ns, "multi_agent_v1");
  EXPECT_EQ(r.namespaced[0].name, "spawn_agent");
  EXPECT_EQ(r.chat.dropped_tools, std::vector<std::string>{"multi_agent_v1.custom"});
  ASSERT_EQ(r.chat.messages.size(), 2u);
  ASSERT_EQ(r.chat.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.chat.messages[1].tool_calls[0].name, "multi_agent_v1__spawn_agent");
  EXPECT_EQ(r.chat.messages[1].tool_calls[1].name, "mcp__fs__read");
  EXPECT_EQ(refused(parse_responses_request(R"({"input": "x", "tools": [{"type": "namespace",
                                                 "name": "n"}]})",
                                            kLeaveOut))
                .param,
            "tools[0].tools");
}

TEST(ItemReference, ResolvesToTheStoredItemOrIsA404NamingIt) {
  const std::string stored =
      R"({"id": "resp_1", "output": [
          {"id": "rs_1", "type": "reasoning", "summary": [],
           "content": [{"type": "reasoning_text", "text": "thinking"}]},
          {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": "Hello", "annotations": []}]},
          {"id": "fc_1_0", "type": "function_call", "call_id": "call_7", "name": "f",
           "arguments": "{\"a\":1}", "status": "completed"}]})";
  EXPECT_EQ(response_id_of_item("msg_1"), "resp_1");
  EXPECT_EQ(response_id_of_item("rs_1"), "resp_1");
  EXPECT_EQ(response_id_of_item("fc_1_0"), "resp_1");
  EXPECT_EQ(response_id_of_item("fc_x"), "");
  EXPECT_EQ(response_id_of_item("item_9"), "");
  const ItemResolver resolve = [&](const std::string& id) -> std::optional<std::string> {
    if (response_id_of_item(id) != "resp_1") return std::nullopt;
    return output_item_of(stored, id);
  };
  ResponsesRequest r = accepted(parse_responses_request(R"({"input": [
      {"role": "user", "content": "Hi"}, {"type": "item_reference", "id": "rs_1"},
      {"id": "msg_1"}, {"type": "item_reference", "id": "fc_1_0"},
      {"type": "function_call_output", "call_id": "call_7", "output": "ok"}]})",
                                                        kLeaveOut, resolve));
  ASSERT_EQ(r.chat.messages.size(), 3u);
  const chat::Message& a = r.chat.messages[1];
  EXPECT_EQ(a.role, "assistant");
  EXPECT_EQ(a.reasoning_content.value_or(""), "thinking");
  EXPECT_EQ(a.content.value_or(""), "Hello");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].id, "call_7");
  EXPECT_EQ(a.tool_calls[0].arguments_json, R"({"a":1})");

  ApiError e = refused(parse_responses_request(
      R"({"input": [{"role": "user", "content": "Hi"},
                    {"type": "item_reference", "id": "msg_2"}]})",
      kLeaveOut, resolve));
  EXPECT_EQ(e.http_status, 404);
  EXPECT_EQ(e.param, "input[1].id");
  EXPECT_NE(e.message.find("msg_2"), std::string::npos);
  EXPECT_EQ(refused(parse_responses_request(
                        R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", kLeaveOut))
                .param,
            "input[0].type")
      << "without a store to resolve from";
}

TEST(CacheBreakpoints, AnthropicCacheControlMarksWhereStablePrefixesEnd) {
  ChatRequest r = accepted(parse_messages_request(R"({
      "system": [{"type": "text", "text": "rules"},
                 {"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}],
      "messages": [
        {"role": "user", "content": [
          {"type": "text", "text": "<reminder>"},
          {"type": "text", "text": "ab", "cache_control": {"type": "ephemeral"}},
          {"type": "text", "text": "question"}]},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "t", "content": "out"},
          {"type": "text", "text": "next", "cache_control": {"type": "ephemeral"}}]}]})",
                                                  kLeaveOut));
  ASSERT_EQ(r.messages.size(), 5u);  // system, user, assistant, tool, user
  // The system message's end; after "<reminder>\nab" in the first user message; the end of what
  // the last message became (a tool message and a user message).
  EXPECT_EQ(r.cache_breakpoints,
            (std::vector<chat::CacheBreakpoint>{{.message = 0, .content_bytes = 10},
                                                {.message = 1, .content_bytes = 13},
                                                {.message = 4, .content_bytes = 4}}));
  ChatRequest tools_only = accepted(parse_messages_request(R"({"system": "s",
      "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "f", "input_schema": {}, "cache_control": {"type": "ephemeral"}}]})",
                                                           kLeaveOut));
  EXPECT_EQ(tools_only.cache_breakpoints,
            (std::vector<chat::CacheBreakpoint>{{.message = 0, .content_bytes = 1}}));
}

TEST(ClaudeCode, TheBillingHeaderBlockIsNotPartOfTheSystemPrompt) {
  ChatRequest r = accepted(parse_messages_request(R"({
      "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.1c9; cc_entrypoint=sdk-cli;"},
                 {"type": "text", "text": "You are an agent."}],
      "messages": [{"role": "user", "content": "x"}]})",
                                                  kLeaveOut));
  ASSERT_FALSE(r.messages.empty());
  EXPECT_EQ(r.messages[0].content.value_or(""), "You are an agent.");
}

TEST(CacheBreakpoints, AtMostTheFourDeepestAreKept) {
  std::string msgs;
  for (int i = 0; i < 6; ++i) {
    if (i > 0) msgs += ",";
    msgs += fmt::format(R"({{"role": "{}", "content": [{{"type": "text", "text": "m{}",
                            "cache_control": {{"type": "ephemeral"}}}}]}})",
                        i % 2 ? "assistant" : "user", i);
  }
  ChatRequest r = accepted(parse_messages_request(R"({"messages": [)" + msgs + "]}", kLeaveOut));
  ASSERT_EQ(r.cache_breakpoints.size(), 4u);
  EXPECT_EQ(r.cache_breakpoints.front().message, 2u);
  EXPECT_EQ(r.cache_breakpoints.back().message, 5u);
}

}  // namespace
}  // namespace recur::server
