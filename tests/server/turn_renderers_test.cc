// The Anthropic and Responses renderers over turns with reasoning, text and tool calls: the event
// sequences a model's tool call produces (the e2e tests' random-weight models never call tools).
#include <gtest/gtest.h>

#include "server/anthropic_response.h"
#include "server/responses_response.h"

namespace recur::server {
namespace {

class StringWriter final : public ChunkWriter {
 public:
  bool write(std::string_view data) override {
    text += data;
    return true;
  }
  std::string text;
};

// The `event:` names in order.
std::vector<std::string> event_names(const std::string& sse) {
  std::vector<std::string> out;
  for (size_t at = sse.find("event: "); at != std::string::npos; at = sse.find("event: ", at)) {
    at += 7;
    out.push_back(sse.substr(at, sse.find('\n', at) - at));
  }
  return out;
}

// The sequence_number fields in order of appearance.
std::vector<int> sequence_numbers(const std::string& sse) {
  std::vector<int> out;
  const std::string key = "\"sequence_number\":";
  for (size_t at = sse.find(key); at != std::string::npos; at = sse.find(key, at)) {
    at += key.size();
    out.push_back(std::stoi(sse.substr(at, 12)));
  }
  return out;
}

TurnResult tool_turn() {
  TurnResult r;
  r.reasoning = "think";
  r.content = "";
  r.tool_calls = {
      {.id = "id-call-0", .name = "get_weather", .arguments_json = R"({"city":"Oslo"})"}};
  r.usage = {.prompt_tokens = 100, .cached_tokens = 60, .completion_tokens = 9};
  r.prompt_stored = true;
  return r;
}

TEST(AnthropicUsage, SplitsThePromptAsTheCacheServedIt) {
  AnthropicUsage u = anthropic_usage({.prompt_tokens = 100, .cached_tokens = 60}, true);
  EXPECT_EQ(u.cache_read_input_tokens, 60);
  EXPECT_EQ(u.cache_creation_input_tokens, 40);
  EXPECT_EQ(u.input_tokens, 0);
  u = anthropic_usage({.prompt_tokens = 100, .cached_tokens = 0}, false);
  EXPECT_EQ(u.input_tokens, 100);
  EXPECT_EQ(u.cache_creation_input_tokens, 0);
}

TEST(AnthropicRenderer, StreamsThinkingThenToolUse) {
  ChatRequest req;
  req.gen.stream = true;
  AnthropicRenderer r("msg-1", "m", req, 100);
  StringWriter out;
  engine::Event first;
  first.trace.hit = true;
  first.trace.hit_tokens = 60;
  ASSERT_TRUE(r.first_event(out, first));
  ASSERT_TRUE(r.delta(out, {.reasoning = "think", .reasoning_block = true}));
  ASSERT_TRUE(r.finish(out, tool_turn()));
  EXPECT_EQ(event_names(out.text),
            (std::vector<std::string>{
                "message_start", "ping", "content_block_start", "content_block_delta",
                "content_block_delta", "content_block_stop", "content_block_start",
                "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_NE(out.text.find(R"("cache_read_input_tokens":60)"), std::string::npos);
  // The thinking block ends with its (empty) signature, as Anthropic's stream does.
  EXPECT_NE(out.text.find(R"({"type":"content_block_delta","index":0,)"
                          R"("delta":{"type":"signature_delta","signature":""}})"
                          "\n\nevent: content_block_stop"),
            std::string::npos)
      << out.text;
  EXPECT_NE(
      out.text.find(R"({"type":"tool_use","id":"id-call-0","name":"get_weather","input":{}})"),
      std::string::npos);
  EXPECT_NE(out.text.find(R"({"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"})"),
            std::string::npos);
  EXPECT_NE(out.text.find(R"("stop_reason":"tool_use")"), std::string::npos);
}

TEST(AnthropicRenderer, BodyHasBlocksInOrder) {
  ChatRequest req;
  AnthropicRenderer r("msg-1", "m", req, 100);
  StringWriter out;
  ASSERT_TRUE(r.finish(out, tool_turn()));
  EXPECT_NE(out.text.find(R"("content":[{"type":"thinking","thinking":"think","signature":""},)"
                          R"({"type":"tool_use","id":"id-call-0","name":"get_weather",)"
                          R"("input":{"city":"Oslo"}}])"),
            std::string::npos)
      << out.text;
  EXPECT_NE(out.text.find(R"("usage":{"input_tokens":0,"cache_creation_input_tokens":40,)"
                          R"("cache_read_input_tokens":60,"output_tokens":9})"),
            std::string::npos);
}

TEST(ResponsesRenderer, StreamsReasoningThenFunctionCall) {
  ResponsesRequest req;
  ResponsesRenderer r(response_echo(req, "resp-1", "m", 0), true, {});
  StringWriter out;
  ASSERT_TRUE(r.start(out));
  ASSERT_TRUE(r.delta(out, {.reasoning = "think", .reasoning_block = true}));
  ASSERT_TRUE(r.finish(out, tool_turn()));
  EXPECT_EQ(event_names(out.text),
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.reasoning_text.delta",
                "response.reasoning_text.done", "response.content_part.done",
                "response.output_item.done", "response.output_item.added",
                "response.function_call_arguments.delta", "response.function_call_arguments.done",
                "response.output_item.done", "response.completed"}));
  // Numbered in the order they are written (the first two are made in one statement).
  std::vector<int> seq = sequence_numbers(out.text);
  ASSERT_EQ(seq.size(), 13u);
  for (size_t i = 0; i < seq.size(); ++i) EXPECT_EQ(seq[i], static_cast<int>(i));
  EXPECT_NE(out.text.find(R"("type":"function_call","status":"completed","call_id":"id-call-0",)"
                          R"("name":"get_weather","arguments":"{\"city\":\"Oslo\"}")"),
            std::string::npos);
  EXPECT_NE(out.text.find(R"("input_tokens_details":{"cached_tokens":60})"), std::string::npos);
}

TEST(ResponsesRenderer, StoresBeforeAnswering) {
  ResponsesRequest req;
  ResponseStore store({.capacity_bytes = 1 << 20, .ttl = std::chrono::hours(1)});
  ResponsesRenderer r(response_echo(req, "resp-2", "m", 0), false,
                      {.store = &store,
                       .tenant = "t",
                       .session = "s",
                       .input_messages = {chat::Message{.role = "user", .content = "hi"}}});
  TurnResult t = tool_turn();
  t.reply = chat::Message{.role = "assistant", .content = "", .tool_calls = t.tool_calls};
  StringWriter out;
  ASSERT_TRUE(r.finish(out, t));
  auto stored = store.get("resp-2", "t");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->response_json, out.text);
  ASSERT_EQ(stored->messages.size(), 2u);
  EXPECT_EQ(stored->messages[1].tool_calls.size(), 1u);
}

// recur's fields close the body and the stored copy GET returns; a stream's response.completed
// event carries the response without them.
TEST(ResponsesRenderer, RecurFieldsInTheStoredBodyNotInTheCompletedEvent) {
  ResponsesRequest req;
  ResponseStore store({.capacity_bytes = 1 << 20, .ttl = std::chrono::hours(1)});
  ResponsesRenderer r(response_echo(req, "resp-3", "m", 0), true,
                      {.store = &store, .tenant = "t", .session = "s"});
  TurnResult t = tool_turn();
  t.trace = {.hit = true, .hit_tokens = 60, .store = "snapshot", .origin = "warmup"};
  RequestTiming timing;
  t.timing = &timing;
  StringWriter out;
  ASSERT_TRUE(r.start(out));
  ASSERT_TRUE(r.finish(out, t));
  auto stored = store.get("resp-3", "t");
  ASSERT_TRUE(stored);
  const std::string& body = stored->response_json;
  const std::size_t cache_at = body.find(R"(,"x_recur_cache":"hit; tokens=60; store=snapshot;)");
  ASSERT_NE(cache_at, std::string::npos) << body;
  EXPECT_NE(body.find(R"(,"x_recur_timing":{"parse_ms":0,)", cache_at), std::string::npos);
  EXPECT_TRUE(body.ends_with(",\"prefill_tokens\":0,\"prefill_steps\":0}}")) << body;
  const std::size_t completed = out.text.find("event: response.completed");
  ASSERT_NE(completed, std::string::npos);
  EXPECT_EQ(out.text.find("x_recur_", completed), std::string::npos);
  EXPECT_NE(out.text.find(": x-recur-cache hit; tokens=60;"), std::string::npos);
}

}  // namespace
}  // namespace recur::server
