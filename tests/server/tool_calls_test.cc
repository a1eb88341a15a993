#include "server/tool_calls.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

const char* kTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{
  "type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},
  "zip":{"type":"string"}}}}}])";

TEST(ToolCalls, Qwen3JsonForm) {
  auto r = parse_tool_calls(
      "Let me check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Oslo\"}}\n</tool_call>",
      kTools, "call_");
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].id, "call_0");
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"Oslo"})");
}

TEST(ToolCalls, Qwen35XmlFormWithTypedParameters) {
  auto r = parse_tool_calls(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n10001\n</parameter>\n</function>\n"
      "</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nline one\nline two\n"
      "</parameter>\n</function>\n</tool_call>",
      kTools, "c");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"New York","days":3,"zip":"10001"})");
  EXPECT_EQ(r.calls[1].arguments_json, R"({"city":"line one\nline two"})");
  EXPECT_EQ(r.calls[1].id, "c1");
}

TEST(ToolCalls, MalformedStaysText) {
  const char* cases[] = {
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad json}}\n</tool_call>",
      "<tool_call>\n{\"name\": \"f\"}\n",  // unterminated
      "<tool_call>\n<function=f>\n<parameter=x>\n1\n</function>\n</tool_call>",
      "<tool_call>\n{\"name\": \"f\"}\n</tool_call> and then more text",
      "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
  };
  for (const char* text : cases) {
    auto r = parse_tool_calls(text, kTools, "c");
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCalls, NoToolCallIsPlainContent) {
  auto r = parse_tool_calls("just an answer <tool", kTools, "c");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "just an answer <tool");
}

TEST(ToolCallStreamFilter, HoldsBackAPossibleTagAndTheCall) {
  ToolCallStreamFilter f;
  std::string out;
  out += f.push("Sure, ");
  out += f.push("checking <to");
  EXPECT_EQ(out, "Sure, checking ");
  out += f.push("ol_call>\n{\"name\"");
  EXPECT_TRUE(f.in_tool_call());
  out += f.push(": \"f\"}\n</tool_call>");
  EXPECT_EQ(out, "Sure, checking ");
  EXPECT_EQ(f.held(), "<tool_call>\n{\"name\": \"f\"}\n</tool_call>");
  EXPECT_EQ(f.all_text(), "Sure, checking <tool_call>\n{\"name\": \"f\"}\n</tool_call>");
}

TEST(ToolCallStreamFilter, FalseAlarmIsReleased) {
  ToolCallStreamFilter f;
  std::string out = f.push("a <to");
  out += f.push("p> b");
  EXPECT_EQ(out, "a <top> b");
  EXPECT_FALSE(f.in_tool_call());
  EXPECT_EQ(f.held(), "");
}

}  // namespace
}  // namespace recur::server
