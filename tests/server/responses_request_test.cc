#include "server/responses_request.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

const RequestLimits kLimits;

ResponsesRequest ok(const std::string& body) {
  auto r = parse_responses_request(body, kLimits);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<ResponsesRequest>(r);
}

ApiError bad(const std::string& body) {
  auto r = parse_responses_request(body, kLimits);
  if (std::holds_alternative<ResponsesRequest>(r)) {
    ADD_FAILURE() << "accepted: " << body;
    return {};
  }
  return std::get<ApiError>(r);
}

TEST(ResponsesRequest, StringInputIsOneUserMessage) {
  auto r = ok(R"({"model": "m", "input": "hi", "instructions": "be brief", "store": false,
                  "max_output_tokens": 32, "previous_response_id": "resp-1",
                  "metadata": {"k": "v"}, "reasoning": {"effort": "minimal"}})");
  ASSERT_EQ(r.chat.messages.size(), 1u);
  EXPECT_EQ(r.chat.messages[0].role, "user");
  EXPECT_EQ(r.chat.messages[0].content, "hi");
  EXPECT_EQ(r.instructions, "be brief");
  EXPECT_FALSE(r.store);
  EXPECT_EQ(r.chat.gen.max_tokens, 32);
  EXPECT_EQ(r.previous_response_id, "resp-1");
  EXPECT_EQ(r.metadata_json, R"({"k":"v"})");
  EXPECT_EQ(r.chat.chat_template_kwargs_json,
            R"({"enable_thinking":false,"reasoning_effort":"low"})");
}

TEST(ResponsesRequest, AnAssistantTurnsItemsMergeIntoOneMessage) {
  auto r = ok(R"({"input": [
    {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [],
     "content": [{"type": "reasoning_text", "text": "call it"}]},
    {"type": "message", "role": "assistant",
     "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"z\":1}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"}
  ], "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
     "tool_choice": {"type": "function", "name": "get_weather"}})");
  ASSERT_EQ(r.chat.messages.size(), 4u);
  const auto& a = r.chat.messages[1];
  EXPECT_EQ(a.role, "assistant");
  EXPECT_EQ(a.reasoning_content, "call it");
  EXPECT_EQ(a.content, "Checking.");
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].id, "c1");
  EXPECT_EQ(a.tool_calls[0].arguments_json, R"({"z":1})");
  EXPECT_EQ(r.chat.messages[2].role, "tool");
  EXPECT_EQ(r.chat.messages[2].tool_call_id, "c1");
  EXPECT_EQ(r.chat.messages[3].role, "assistant");
  EXPECT_EQ(r.chat.messages[3].content, "");
  EXPECT_EQ(r.chat.messages[3].tool_calls.size(), 1u);
  EXPECT_EQ(
      r.chat.tools_json,
      R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
  EXPECT_EQ(r.chat.tool_choice_json, R"({"type":"function","function":{"name":"get_weather"}})");
  EXPECT_EQ(r.tool_choice_json, R"({"type":"function","name":"get_weather"})");
}

// Codex's shapes: developer messages, tool output as parts, reasoning with only a summary.
TEST(ResponsesRequest, DeveloperMessagesPartsOutputsAndReasoningSummaries) {
  auto r = ok(R"({"input": [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d1"}]},
    {"type": "message", "role": "developer", "content": "d2"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s1"},
                                                     {"type": "summary_text", "text": "s2"}],
     "encrypted_content": null},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1",
     "output": [{"type": "input_text", "text": "out 1"}, {"type": "output_text", "text": "out 2"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
    {"type": "message", "role": "user", "content": ""}
  ]})");
  ASSERT_EQ(r.chat.messages.size(), 7u);
  EXPECT_EQ(r.chat.messages[0].role, "developer");
  EXPECT_EQ(r.chat.messages[1].content, "d2");
  EXPECT_EQ(r.chat.messages[3].reasoning_content, "s1\ns2");
  ASSERT_EQ(r.chat.messages[3].tool_calls.size(), 1u);
  EXPECT_EQ(r.chat.messages[4].role, "tool");
  EXPECT_EQ(r.chat.messages[4].content, "out 1\nout 2");
  EXPECT_EQ(r.chat.messages[5].content, "no");
  EXPECT_EQ(r.chat.messages[6].content, "");
}

TEST(ResponsesRequest, MediaPartsAreRefusedByName) {
  ApiError e = bad(R"({"input": [{"type": "function_call_output", "call_id": "c",
                                  "output": [{"type": "input_image", "image_url": "x"}]}]})");
  EXPECT_EQ(e.param, "input[0].output[0].type");
  EXPECT_NE(e.message.find("'input_image' is not supported: recur serves text-only models"),
            std::string::npos)
      << e.message;
  e = bad(R"({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]})");
  EXPECT_EQ(e.param, "input[0].content[0].type");
  EXPECT_NE(e.message.find("text-only"), std::string::npos);
}

TEST(ResponsesRequest, StrictToolsAndTextFormat) {
  ResponsesRequest r = ok(R"({"input": "x", "tools": [{"type": "function", "name": "f",
    "parameters": {"type": "object"}, "strict": true}],
    "text": {"format": {"type": "json_object"}}})");
  EXPECT_NE(r.chat.tools_json.find(R"("strict":true)"), std::string::npos) << r.chat.tools_json;
  EXPECT_EQ(r.chat.output_format.kind, OutputFormat::Kind::kJsonObject);
}

TEST(ResponsesRequest, ErrorsNameTheField) {
  EXPECT_EQ(bad(R"({"model": "m"})").param, "input");
  EXPECT_EQ(bad(R"({"input": 3})").param, "input");
  EXPECT_EQ(bad(R"({"input": [{"type": "item_reference", "id": "x"}]})").param, "input[0].type");
  EXPECT_EQ(bad(R"({"input": [{"role": "tool", "content": "x"}]})").param, "input[0].role");
  EXPECT_EQ(bad(R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})").param,
            "input[0].content[0].type");
  EXPECT_EQ(bad(R"({"input": "x", "background": true})").param, "background");
  EXPECT_EQ(bad(R"({"input": "x", "text": {"format": {"type": "json_schema"}}})").param,
            "text.format.schema");
  EXPECT_EQ(bad(R"({"input": "x", "text": {"format": {"type": "xml"}}})").param,
            "text.format.type");
  EXPECT_EQ(bad(R"({"input": "x", "reasoning": {"effort": "max"}})").param, "reasoning.effort");
  EXPECT_EQ(bad(R"({"input": "x", "max_output_tokens": 0})").param, "max_output_tokens");
}

}  // namespace
}  // namespace recur::server
