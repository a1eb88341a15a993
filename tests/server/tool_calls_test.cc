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

// Granite 4.0's template writes calls back as the Qwen3 JSON form, consecutive calls joined by
// one "\n" and no text between (ibm-granite-granite-4.0.jinja); its model emits the same.
TEST(ToolCalls, Granite4Form) {
  auto r = parse_tool_calls(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"New York\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Bengaluru\", \"days\": 2}}\n</tool_call>",
      kTools, "call_");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"New York"})");
  EXPECT_EQ(r.calls[1].arguments_json, R"({"city":"Bengaluru","days":2})");
  EXPECT_EQ(r.calls[1].id, "call_1");
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

// Llama 3.x: the reply is the call, as the template writes it back ("parameters"), optionally
// after <|python_tag|>, several separated by ";".
TEST(ToolCalls, Llama3JsonForm) {
  auto r = parse_tool_calls(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 2}}", kTools,
      "call_");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].id, "call_0");
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"Oslo","days":2})");

  r = parse_tool_calls(
      "<|python_tag|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a; {b}\"}}; "
      "{\"name\": \"get_weather\", \"parameters\": {}}\n",
      kTools, "c");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"a; {b}"})");
  EXPECT_EQ(r.calls[1].arguments_json, "{}");
  EXPECT_EQ(r.calls[1].id, "c1");
}

TEST(ToolCalls, Llama3FormThatIsNotACallStaysText) {
  const char* cases[] = {
      "{\"name\": \"unknown_tool\", \"parameters\": {}}",           // not a tool of the request
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": }}",  // bad JSON
      "{\"name\": \"get_weather\", \"parameters\": {}} and more",   // text after it
      "{\"name\": \"get_weather\", \"parameters\": \"Oslo\"}",      // arguments not an object
      "Sure: {\"name\": \"get_weather\", \"parameters\": {}}",      // text before it
      "{\"name\": \"get_weather\", \"parameters\": {}",             // unterminated
  };
  for (const char* text : cases) {
    auto r = parse_tool_calls(text, kTools, "c");
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
  EXPECT_TRUE(parse_tool_calls("{\"name\": \"get_weather\"}", "", "c").calls.empty());
}

// LFM2 (docs/model-lfm2.md): pythonic calls between <|tool_call_start|> and <|tool_call_end|>,
// words after the call, Python literals as JSON.
TEST(ToolCalls, Lfm2PythonicForm) {
  auto r = parse_tool_calls(
      "<|tool_call_start|>[get_weather(city=\"Oslo\", days=3), get_weather(city='S\\'dam',"
      " zip=None, opts={'metric': True, 'n': [1, 2.5, -3]}, tags=('a',))]<|tool_call_end|>"
      "Checking the weather.",
      kTools, "c");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].id, "c0");
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"Oslo","days":3})");
  EXPECT_EQ(r.calls[1].arguments_json,
            R"({"city":"S'dam","zip":null,"opts":{"metric":true,"n":[1,2.5,-3]},"tags":["a"]})");
  EXPECT_EQ(r.calls[1].id, "c1");
  EXPECT_EQ(r.content, "Checking the weather.");
  EXPECT_EQ(r.trailing, "Checking the weather.");

  auto two = parse_tool_calls(
      "Sure.\n<|tool_call_start|>[get_weather()]<|tool_call_end|>\n"
      "<|tool_call_start|>[get_weather(city=\"a\\nb\\u00e9\")]<|tool_call_end|>",
      kTools, "c");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].arguments_json, "{}");
  EXPECT_EQ(two.calls[1].arguments_json, "{\"city\":\"a\\nb\u00e9\"}");
  EXPECT_EQ(two.calls[1].id, "c1");
  EXPECT_EQ(two.content, "Sure.");
  EXPECT_EQ(two.trailing, "");
}

// The marker-less list (a tokenizer whose markers are special drops them in decoding) is a call
// only as the whole reply naming the request's tools.
TEST(ToolCalls, Lfm2BareListNamingRequestTools) {
  auto r = parse_tool_calls(" [get_weather(city=\"Oslo\")] ", kTools, "c");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments_json, R"({"city":"Oslo"})");
  EXPECT_EQ(r.content, "");
  for (const char* text : {"[other(city=\"Oslo\")]", "[1, 2, 3]", "See [get_weather(city=1)]",
                           "[get_weather(city=1)] and more"}) {
    auto t = parse_tool_calls(text, kTools, "c");
    EXPECT_TRUE(t.calls.empty()) << text;
    EXPECT_EQ(t.content, text);
  }
}

TEST(ToolCalls, Lfm2MalformedStaysText) {
  std::string deep = "<|tool_call_start|>[get_weather(city=";
  for (int i = 0; i < 200; ++i) deep += "[";
  deep += "<|tool_call_end|>";
  const std::string cases[] = {
      "<|tool_call_start|>[get_weather(city=\"Oslo\")]",              // no end marker
      "<|tool_call_start|>[get_weather(\"Oslo\")]<|tool_call_end|>",  // positional
      "<|tool_call_start|>[get_weather(city=os.getcwd())]<|tool_call_end|>",
      "<|tool_call_start|>[get_weather(city=\"Oslo)]<|tool_call_end|>",
      "<|tool_call_start|>get_weather(city=1)<|tool_call_end|>",
      "<|tool_call_start|>[]<|tool_call_end|>",
      "<|tool_call_start|>[get_weather(city=1)] extra<|tool_call_end|>",
      deep};
  for (const std::string& text : cases) {
    auto r = parse_tool_calls(text, kTools, "c");
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolCallStreamFilter, HoldsAnLfm2CallAndWhatFollows) {
  ToolCallStreamFilter f;
  std::string out = f.push("Let me look. <|tool_");
  EXPECT_EQ(out, "Let me look. ");
  out += f.push("call_start|>[get_weather(city=\"Oslo\")]<|tool_call_end|>");
  EXPECT_TRUE(f.in_tool_call());
  out += f.push("Done.");
  EXPECT_EQ(out, "Let me look. ");
  EXPECT_EQ(f.held(), "<|tool_call_start|>[get_weather(city=\"Oslo\")]<|tool_call_end|>Done.");

  ToolCallStreamFilter g;  // the bare list is held from its start
  out = g.push("[get_weather(");
  EXPECT_EQ(out, "");
  EXPECT_TRUE(g.in_tool_call());
}

TEST(ToolCallStreamFilter, HoldsALlamaCallFromItsStart) {
  ToolCallStreamFilter f;
  std::string out = f.push("\n<|python");
  out += f.push("_tag|>{\"name\"");
  EXPECT_TRUE(f.in_tool_call());
  out += f.push(": \"f\"}");
  EXPECT_EQ(out, "");
  EXPECT_EQ(f.held(), "\n<|python_tag|>{\"name\": \"f\"}");

  ToolCallStreamFilter g;
  out = g.push("  {");
  out += g.push("\"a\": 1}");
  EXPECT_EQ(out, "");
  EXPECT_TRUE(g.in_tool_call());

  ToolCallStreamFilter h;  // a reply that only starts like the tag is released
  out = h.push("<|py");
  EXPECT_EQ(out, "");
  out += h.push("ramid");
  EXPECT_EQ(out, "<|pyramid");
  EXPECT_FALSE(h.in_tool_call());
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
