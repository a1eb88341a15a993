#include "server/output_format.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar.h"
#include "server/tool_choice_grammar.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

OutputFormat chat_format(const char* body) {
  OutputFormat f;
  auto e = parse_chat_output_format(json::parse(body), f);
  EXPECT_FALSE(e.has_value()) << e->message;
  return f;
}

std::string chat_format_error(const char* body) {
  OutputFormat f;
  auto e = parse_chat_output_format(json::parse(body), f);
  EXPECT_TRUE(e.has_value()) << body;
  return e ? e->param + ": " + e->message : "";
}

TEST(OutputFormat, ChatResponseFormat) {
  EXPECT_EQ(chat_format(R"({})").kind, OutputFormat::Kind::kText);
  EXPECT_EQ(chat_format(R"({"response_format": {"type": "text"}})").kind,
            OutputFormat::Kind::kText);
  EXPECT_EQ(chat_format(R"({"response_format": {"type": "json_object"}})").kind,
            OutputFormat::Kind::kJsonObject);
  OutputFormat f = chat_format(R"({"response_format": {"type": "json_schema", "json_schema":
      {"name": "w", "strict": true, "schema": {"type": "object", "properties": {"z": {}, "a": {}}}}}})");
  EXPECT_EQ(f.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(f.schema_json, R"({"type":"object","properties":{"z":{},"a":{}}})");  // key order kept
  EXPECT_EQ(f.name, "w");
  EXPECT_TRUE(f.strict);
  EXPECT_EQ(f.param, "response_format.json_schema.schema");
  OutputFormat g = chat_format(R"({"grammar": "root ::= \"a\""})");
  EXPECT_EQ(g.kind, OutputFormat::Kind::kGrammar);
  EXPECT_EQ(g.grammar, "root ::= \"a\"");
}

TEST(OutputFormat, ChatErrorsNameTheField) {
  EXPECT_EQ(chat_format_error(R"({"response_format": {"type": "xml"}})"),
            "response_format.type: 'response_format.type' must be text, json_object or "
            "json_schema, got 'xml'");
  EXPECT_EQ(chat_format_error(R"({"response_format": "json"})"),
            "response_format: 'response_format' must be an object, got a string");
  EXPECT_EQ(chat_format_error(R"({"response_format": {}})"),
            "response_format.type: 'response_format.type' is required (a string)");
  EXPECT_EQ(chat_format_error(R"({"response_format": {"type": "json_schema"}})"),
            "response_format.json_schema: 'response_format.json_schema' is required for type "
            "json_schema");
  EXPECT_EQ(chat_format_error(
                R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}})"),
            "response_format.json_schema.schema: 'response_format.json_schema.schema' must be an "
            "object, got a number");
  EXPECT_EQ(chat_format_error(R"({"grammar": 5})"),
            "grammar: 'grammar' must be a string (GBNF), got a number");
  EXPECT_EQ(chat_format_error(R"({"response_format": {"type": "json_object"}, "grammar": "x"})"),
            "grammar: 'grammar' cannot be combined with 'response_format'");
}

TEST(OutputFormat, ResponsesAndAnthropic) {
  OutputFormat r;
  EXPECT_FALSE(parse_responses_output_format(
      json::parse(
          R"({"text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "string"}}}})"),
      r));
  EXPECT_EQ(r.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(r.param, "text.format.schema");
  EXPECT_EQ(responses_text_format(r).dump(),
            R"({"type":"json_schema","name":"n","schema":{"type":"string"},"strict":false})");
  OutputFormat a;
  EXPECT_FALSE(parse_anthropic_output_format(
      json::parse(
          R"({"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}})"),
      a));
  EXPECT_EQ(a.param, "output_config.format.schema");
  OutputFormat beta;
  EXPECT_FALSE(parse_anthropic_output_format(
      json::parse(R"({"output_format": {"type": "json_schema", "schema": {"type": "object"}}})"),
      beta));
  EXPECT_EQ(beta.kind, OutputFormat::Kind::kJsonSchema);
  OutputFormat bad;
  auto e = parse_anthropic_output_format(
      json::parse(R"({"output_config": {"format": {"type": "json_object"}}})"), bad);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "output_config.format.type");
}

// Text without the marker: checked against std::string::find over every string of a small
// alphabet that can spell the marker.
TEST(ToolChoiceGrammar, TextWithoutMarkerIsExact) {
  const std::string marker = "</p>";
  auto g = grammar::parse_gbnf("root ::= free\n" + text_without_gbnf("free", marker));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const std::string alphabet = "</p>x";
  for (int len = 0; len <= 7; ++len) {
    std::vector<int> digits(static_cast<std::size_t>(len), 0);
    while (true) {
      std::string s;
      for (int d : digits) s += alphabet[static_cast<std::size_t>(d)];
      ASSERT_EQ(grammar::accepts(**g, s), s.find(marker) == std::string::npos) << s;
      int i = 0;
      while (i < len &&
             ++digits[static_cast<std::size_t>(i)] == static_cast<int>(alphabet.size())) {
        digits[static_cast<std::size_t>(i++)] = 0;
      }
      if (i == len) break;
    }
  }
}

ChatRequest tool_request(const char* choice) {
  ChatRequest r;
  r.tools_json =
      R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},
    "required":["city"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}])";
  r.tool_choice_json = choice;
  r.parallel_tool_calls = false;
  return r;
}

std::shared_ptr<const grammar::Grammar> forced(const ChatRequest& r, std::string_view tmpl) {
  auto g = forced_tool_call_gbnf(r, call_syntax(tmpl));
  if (const ApiError* e = as_error(g)) ADD_FAILURE() << e->message;
  auto parsed = grammar::parse_gbnf(std::get<std::string>(g));
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().to_string() << "\n" << std::get<std::string>(g);
  return parsed.is_ok() ? *parsed : nullptr;
}

TEST(ToolChoiceGrammar, ForcedCallsInEachSyntax) {
  auto hermes = forced(tool_request(R"("required")"), "{{ '<tool_call>' }}");
  EXPECT_TRUE(grammar::accepts(
      *hermes,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"days\": 3}}\n</tool_call>"));
  EXPECT_TRUE(grammar::accepts(
      *hermes, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar::accepts(
      *hermes,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n</tool_call>"));
  EXPECT_FALSE(
      grammar::accepts(*hermes,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", "
                       "\"days\": 9}}\n</tool_call>"));
  EXPECT_FALSE(grammar::accepts(*hermes, "Sure!"));

  auto named =
      forced(tool_request(R"({"type":"function","function":{"name":"ping"}})"), "<tool_call>");
  EXPECT_TRUE(grammar::accepts(
      *named, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(grammar::accepts(
      *named,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\"}}\n</tool_call>"));

  auto xml = forced(tool_request(R"("required")"), "<tool_call><function=");
  EXPECT_TRUE(grammar::accepts(
      *xml,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew <b>\nYork\n"
      "</parameter>\n<parameter=days>\n4\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(grammar::accepts(*xml,
                               "<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</"
                               "parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(grammar::accepts(
      *xml,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nX</parameter>\n</parameter>\n"
      "</function>\n</tool_call>"));

  EXPECT_EQ(call_syntax("{{ tools }}"), CallSyntax::kUnknown);
  EXPECT_EQ(call_syntax("{{ tools }}", true), CallSyntax::kPythonic);  // LFM2: known by its vocab
  auto lfm2 = forced(tool_request(R"("required")"), "<|tool_call_start|>");
  EXPECT_TRUE(grammar::accepts(
      *lfm2, "<|tool_call_start|>[get_weather(city=\"Paris\", days=3)]<|tool_call_end|>"));
  EXPECT_TRUE(
      grammar::accepts(*lfm2, "<|tool_call_start|>[get_weather(city=\"P\")]<|tool_call_end|>"));
  EXPECT_TRUE(grammar::accepts(*lfm2, "<|tool_call_start|>[ping()]<|tool_call_end|>"));
  EXPECT_FALSE(
      grammar::accepts(*lfm2, "<|tool_call_start|>[get_weather(days=3)]<|tool_call_end|>"));
  EXPECT_FALSE(
      grammar::accepts(*lfm2, "<|tool_call_start|>[get_weather(city=\"P\", )]<|tool_call_end|>"));
  ChatRequest flags = tool_request(R"("required")");
  flags.tools_json = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
    "properties":{"a":{"type":"boolean"},"b":{"type":["string","null"]},"c":{"enum":[true,"true"]}},
    "required":["a"]}}}])";
  auto py = forced(flags, "<|tool_call_start|>");
  EXPECT_TRUE(
      grammar::accepts(*py, "<|tool_call_start|>[f(a=True, b=None, c=True)]<|tool_call_end|>"));
  EXPECT_TRUE(
      grammar::accepts(*py, "<|tool_call_start|>[f(a=False, c=\"true\")]<|tool_call_end|>"));
  EXPECT_FALSE(grammar::accepts(*py, "<|tool_call_start|>[f(a=true)]<|tool_call_end|>"));

  auto llama = forced(tool_request(R"("required")"), "<|python_tag|>");
  EXPECT_TRUE(grammar::accepts(*llama, "{\"name\": \"ping\", \"parameters\": {}}"));
}

TEST(ToolChoiceGrammar, StrictToolsMakeAutoCallsExact) {
  ChatRequest r = tool_request(R"("auto")");
  EXPECT_EQ(std::get<std::string>(forced_tool_call_gbnf(r, call_syntax("<tool_call>"))),
            "");  // none strict
  r.tools_json = R"([{"type":"function","function":{"name":"get_weather","strict":true,
    "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],
    "additionalProperties":false}}}])";
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  for (const char* choice : {R"("auto")", ""}) {
    r.tool_choice_json = choice;
    auto g = forced(r, "<tool_call>");
    EXPECT_TRUE(
        grammar::accepts(*g, "Let me look.\n\n" + call + "{\"city\": \"Oslo\"}}\n</tool_call>"));
    EXPECT_TRUE(grammar::accepts(*g, "No call needed."));
    EXPECT_FALSE(grammar::accepts(*g, call + "{\"town\": \"Oslo\"}}\n</tool_call>"));
    EXPECT_FALSE(grammar::accepts(*g, call + "{\"city\": \"Oslo\"}}\n</tool_call> and more"));
  }
  EXPECT_FALSE(forces_tool_call(r));
  r.tool_choice_json = R"("required")";
  EXPECT_TRUE(forces_tool_call(r));
}

TEST(ToolChoiceGrammar, NoneForbidsTheCallSyntaxAndAutoIsFree) {
  auto none = forced(tool_request(R"("none")"), "<tool_call>");
  EXPECT_TRUE(grammar::accepts(*none, "Just text, <tool> and </tool_call> too."));
  EXPECT_FALSE(grammar::accepts(*none, "Calling: <tool_call>\n{}"));
  EXPECT_EQ(std::get<std::string>(
                forced_tool_call_gbnf(tool_request(R"("auto")"), call_syntax("<tool_call>"))),
            "");
  auto unknown = forced_tool_call_gbnf(
      tool_request(R"({"type":"function","function":{"name":"x"}})"), call_syntax("<tool_call>"));
  ASSERT_NE(as_error(unknown), nullptr);
  EXPECT_EQ(as_error(unknown)->param, "tool_choice");
}

}  // namespace
}  // namespace recur::server
