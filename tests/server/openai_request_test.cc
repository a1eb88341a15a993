#include "server/openai_request.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace recur::server {
namespace {

const RequestLimits kLimits;

ChatRequest ok_chat(const std::string& body) {
  auto r = parse_chat_request(body, kLimits);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << e->message;
    return {};
  }
  return std::get<ChatRequest>(r);
}

ApiError bad_chat(const std::string& body) {
  auto r = parse_chat_request(body, kLimits);
  if (std::holds_alternative<ChatRequest>(r)) {
    ADD_FAILURE() << "accepted: " << body;
    return {};
  }
  return std::get<ApiError>(r);
}

TEST(ChatRequest, FullRequest) {
  auto r = ok_chat(R"({
    "model": "m", "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 12,
    "presence_penalty": 0.5, "frequency_penalty": 0.25, "max_completion_tokens": 64,
    "stop": ["\n\n", "END"], "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 3, "prompt_cache_key": "conv-1", "user": "u", "cache_salt": "s",
    "chat_template_kwargs": {"enable_thinking": false},
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
    "tool_choice": "auto",
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null, "reasoning_content": "think",
       "tool_calls": [{"id": "c1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    ]})");
  EXPECT_EQ(r.gen.model, "m");
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.7f);
  EXPECT_EQ(r.gen.sampling.top_k, 40);
  EXPECT_EQ(r.gen.sampling.seed, 12u);
  EXPECT_TRUE(r.gen.seed_given);
  EXPECT_EQ(r.gen.max_tokens, 64);
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r.gen.ignore_eos);
  EXPECT_TRUE(r.gen.stream);
  EXPECT_TRUE(r.gen.include_usage);
  EXPECT_TRUE(r.gen.sampling.logprobs);
  EXPECT_EQ(r.gen.sampling.top_logprobs, 3);
  EXPECT_EQ(r.gen.prompt_cache_key, "conv-1");
  EXPECT_EQ(r.gen.cache_salt, "s");
  EXPECT_EQ(r.chat_template_kwargs_json, R"({"enable_thinking":false})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_TRUE(r.messages[1].content_is_parts);
  EXPECT_EQ(r.messages[1].text(), "hi there");
  EXPECT_FALSE(r.messages[2].content.has_value());
  EXPECT_EQ(r.messages[2].reasoning_content, "think");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments_json, R"({"city":"Oslo"})");
  EXPECT_EQ(r.messages[3].tool_call_id, "c1");
  EXPECT_NE(r.tools_json.find("get_weather"), std::string::npos);
}

// The Vercel AI SDK's Chat Completions provider sends reasoningEffort as reasoning_effort: the
// thinking switch of Qwen3-style templates and gpt-oss's reasoning level.
TEST(ChatRequest, ReasoningEffortIsTheThinkingSwitchAndLevel) {
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "none"})").chat_template_kwargs_json,
            R"({"enable_thinking":false,"reasoning_effort":"low"})");
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "minimal"})").chat_template_kwargs_json,
            R"({"enable_thinking":false,"reasoning_effort":"low"})");
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "medium"})").chat_template_kwargs_json,
            R"({"enable_thinking":true,"reasoning_effort":"medium"})");
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "high"})").chat_template_kwargs_json,
            R"({"enable_thinking":true,"reasoning_effort":"high"})");
  EXPECT_EQ(ok_chat("{" + user + "}").chat_template_kwargs_json, "");
  // An explicit template variable wins; others are kept beside it.
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "low",
                    "chat_template_kwargs": {"enable_thinking": false, "x": 1}})")
                .chat_template_kwargs_json,
            R"({"enable_thinking":false,"reasoning_effort":"low","x":1})");
  EXPECT_EQ(ok_chat("{" + user + R"(, "reasoning_effort": "low",
                    "chat_template_kwargs": {"reasoning_effort": "high"}})")
                .chat_template_kwargs_json,
            R"({"enable_thinking":true,"reasoning_effort":"high"})");
}

TEST(ChatRequest, MaxTokensFallsBackToLegacyField) {
  auto r = ok_chat(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5})");
  EXPECT_EQ(r.gen.max_tokens, 5);
  auto d = ok_chat(R"({"messages":[{"role":"user","content":"x"}]})");
  EXPECT_FALSE(d.gen.max_tokens.has_value());
  EXPECT_FALSE(d.gen.seed_given);
  EXPECT_FALSE(d.gen.ignore_eos);
}

TEST(ChatRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  };
  const Case cases[] = {
      {"not json", "", "not valid JSON"},
      {"[1]", "", "JSON object"},
      {"{}", "messages", "required"},
      {R"({"messages": {}})", "messages", "must be an array"},
      {R"({"messages": []})", "messages", "must not be empty"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role", "wizard"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content", "required"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "a number"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content[0].type", "image_url"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})",
       "messages[0].tool_calls", "only assistant"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})",
       "messages[0].tool_calls[0].function.name", "name"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "temperature",
       "between 0 and 2"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature",
       "a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p",
       "greater than 0"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens",
       "between 1"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})", "max_tokens",
       "an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n", "between 1 and 1"},
      {R"({"messages": [{"role": "user", "content": "x"}], "ignore_eos": 1})", "ignore_eos",
       "a boolean"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop[0]", "a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ""})", "stop", "empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})",
       "stop", "at most 16"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs",
       "requires"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs", "between 0 and 20"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools[0]", "function"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "maybe"})", "tool_choice",
       "auto"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})",
       "chat_template_kwargs", "an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"})",
       "reasoning_effort", "none, minimal, low, medium or high, got 'max'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": 1})",
       "reasoning_effort", "a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": 1})", "stream_options",
       "an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "prompt_cache_key": 7})",
       "prompt_cache_key", "a string"},
  };
  for (const auto& c : cases) {
    ApiError e = bad_chat(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.body << " -> " << e.message;
  }
}

// The shapes the OpenAI SDK and coding agents send: the SDK's returned assistant message pushed
// back (content null, refusal null, tool_calls), tool results as parts, developer and late system
// messages, empty content, reasoning echoed under either name.
TEST(ChatRequest, AgentShapes) {
  auto r = ok_chat(R"({"messages": [
    {"role": "developer", "content": "d1"},
    {"role": "developer", "content": [{"type": "text", "text": "d2"}]},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": null, "refusal": null, "annotations": [], "reasoning": "r1",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "system", "content": "late"},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}], "reasoning_content": "r2", "reasoning": "ignored"},
    {"role": "user", "content": "next"}
  ]})");
  ASSERT_EQ(r.messages.size(), 8u);
  EXPECT_EQ(r.messages[1].content_parts.size(), 1u);
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_FALSE(r.messages[3].content.has_value());
  EXPECT_EQ(r.messages[3].reasoning_content, "r1");
  EXPECT_TRUE(r.messages[4].content_is_parts);
  EXPECT_EQ(r.messages[4].content_parts.size(), 2u);
  EXPECT_EQ(r.messages[5].role, "system");
  EXPECT_EQ(r.messages[6].text(), "no");
  EXPECT_EQ(r.messages[6].reasoning_content, "r2");
  EXPECT_FALSE(r.continue_final_message);
  EXPECT_TRUE(r.add_generation_prompt);
}

// A final assistant message with text is continued (llama.cpp), unless the request says
// otherwise with vLLM's fields.
TEST(ChatRequest, PrefillAndItsFields) {
  const std::string msgs =
      R"("messages": [{"role": "user", "content": "count"}, {"role": "assistant", "content": "One,"}])";
  auto r = ok_chat("{" + msgs + "}");
  EXPECT_TRUE(r.continue_final_message);
  EXPECT_FALSE(r.add_generation_prompt);
  r = ok_chat("{" + msgs + R"(, "add_generation_prompt": true})");
  EXPECT_FALSE(r.continue_final_message);
  EXPECT_TRUE(r.add_generation_prompt);
  r = ok_chat("{" + msgs + R"(, "continue_final_message": false})");
  EXPECT_FALSE(r.continue_final_message);
  EXPECT_TRUE(r.add_generation_prompt);
  r = ok_chat("{" + msgs + R"(, "continue_final_message": true, "add_generation_prompt": false})");
  EXPECT_TRUE(r.continue_final_message);
  r = ok_chat(
      R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})");
  EXPECT_FALSE(r.continue_final_message);
  EXPECT_FALSE(r.add_generation_prompt);
  r = ok_chat(R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant",
    "content": null, "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]})");
  EXPECT_FALSE(r.continue_final_message);
  EXPECT_EQ(
      bad_chat("{" + msgs + R"(, "continue_final_message": true, "add_generation_prompt": true})")
          .param,
      "continue_final_message");
  EXPECT_EQ(
      bad_chat(
          R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})")
          .param,
      "continue_final_message");
  EXPECT_EQ(bad_chat("{" + msgs + R"(, "add_generation_prompt": 1})").param,
            "add_generation_prompt");
}

TEST(ChatRequest, MediaPartsAreRefusedByName) {
  for (const char* type : {"image_url", "input_audio", "file"}) {
    ApiError e = bad_chat(fmt::format(
        R"({{"messages": [{{"role": "user", "content": [{{"type": "text", "text": "x"}}, {{"type": "{}"}}]}}]}})",
        type));
    EXPECT_EQ(e.param, "messages[0].content[1].type");
    EXPECT_EQ(e.message, fmt::format("content part type '{}' is not supported: recur serves "
                                     "text-only models",
                                     type));
  }
  ApiError e = bad_chat(
      R"({"messages": [{"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url"}]}]})");
  EXPECT_EQ(e.param, "messages[0].content[0].type");
  e = bad_chat(R"({"messages": [{"role": "user", "content": [{"type": "magic"}]}]})");
  EXPECT_NE(e.message.find("'magic' is not supported (text and refusal are)"), std::string::npos)
      << e.message;
}

TEST(ChatRequest, MessageCountLimit) {
  RequestLimits small;
  small.max_messages = 2;
  auto r = parse_chat_request(
      R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]})",
      small);
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_NE(std::get<ApiError>(r).message.find("at most 2 messages"), std::string::npos);
}

// Found by fuzz_chat_request: tools or tool-call arguments nested thousands deep overflowed the
// stack when re-serialized (fuzz/regressions/fuzz_chat_request).
TEST(ChatRequest, NestingDepthLimit) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto e = bad_chat(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",)"
                    R"("function":{"name":"f","parameters":)" +
                    deep + "}}]}");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.code, "limit_exceeded");
  EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos) << e.message;
  e = bad_chat(R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f",)"
               R"("arguments":)" +
               deep + "}}]}]}");
  EXPECT_EQ(e.code, "limit_exceeded");
  auto c = parse_completion_request(R"({"prompt":"x","user":)" + deep + "}", kLimits);
  ASSERT_TRUE(std::holds_alternative<ApiError>(c));
  EXPECT_EQ(std::get<ApiError>(c).code, "limit_exceeded");
  // Brackets inside strings do not count; 60 levels of real nesting are fine.
  auto r = ok_chat(R"({"messages":[{"role":"user","content":"[[[[{{{{\"[[[["}],)"
                   R"("chat_template_kwargs":{"a":)" +
                   std::string(60, '[') + std::string(60, ']') + "}}");
  EXPECT_EQ(r.messages[0].content, "[[[[{{{{\"[[[[");
}

TEST(CompletionRequest, PromptForms) {
  auto text =
      parse_completion_request(R"({"prompt":"hello","max_tokens":3,"logprobs":2})", kLimits);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(text));
  const auto& t = std::get<CompletionRequest>(text);
  EXPECT_EQ(std::get<std::string>(t.prompt), "hello");
  EXPECT_EQ(t.gen.sampling.top_logprobs, 2);
  auto ids = parse_completion_request(R"({"prompt":[1,2,3]})", kLimits);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(ids));
  EXPECT_EQ(std::get<std::vector<std::int32_t>>(std::get<CompletionRequest>(ids).prompt).size(),
            3u);
  auto bad = parse_completion_request(R"({"prompt":["a","b"]})", kLimits);
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).param, "prompt");
  auto neg = parse_completion_request(R"({"prompt":[1,-2]})", kLimits);
  ASSERT_TRUE(std::holds_alternative<ApiError>(neg));
  EXPECT_EQ(std::get<ApiError>(neg).param, "prompt[1]");
}

}  // namespace
}  // namespace recur::server
