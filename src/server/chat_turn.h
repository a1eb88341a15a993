// One chat turn after admission, shared by the three chat-shaped APIs (chat/completions, messages,
// responses): pulls engine events, takes their text apart (ReplyParser: reasoning, content, tool
// calls), hands each piece to the API's TurnRenderer (which alone knows the wire format), and
// afterwards queues the next-turn warm-up. While the engine works the writer is asked every quarter
// second whether the client is still there (a stream sends the renderer's heartbeat; a held JSON
// body checks the connection), so a client that went away is noticed within a fraction of a second
// and its sequence freed. Also the raw-text turn of /v1/completions.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_timing.h"
#include "server/service.h"

namespace recur::server {

// Text a stream can send now: reasoning and content (a possible tool call held back).
struct TurnDelta {
  std::string reasoning;
  std::string content;
  std::vector<LogprobEntry> logprobs;  // of content tokens, when logprobs were asked
  // The turn has a reasoning block, maybe still empty: APIs with reasoning blocks open one first.
  bool reasoning_block = false;
};

// A healthy finished turn.
struct TurnResult {
  std::string content;  // outside the tool calls
  // Set when the template splits reasoning and this turn had a reasoning block (maybe empty).
  std::optional<std::string> reasoning;
  std::vector<chat::ToolCall> tool_calls;
  std::vector<LogprobEntry> logprobs;  // of content tokens, when logprobs were asked
  engine::FinishReason finish = engine::FinishReason::kStop;
  std::optional<std::size_t> stop_index;  // which request stop string ended the text
  engine::Usage usage;
  // Generated tokens of the reasoning block, its tags included (0 without one).
  std::int64_t reasoning_tokens = 0;
  engine::CacheTrace trace;
  // The prompt was stored in the cache by this turn (its completion snapshot was admitted).
  bool prompt_stored = false;
  // Content a stream held back as a possible tool call that turned out to be text.
  std::string unstreamed_content;
  // The assistant message as the client will send it back next turn.
  chat::Message reply;
  const RequestTiming* timing = nullptr;  // set by ChatTurn::run
};

// How one API writes a chat turn. The write methods return false once the client is gone. Only a
// stream gets start, first_event and delta; every turn gets finish or fail.
class TurnRenderer {
 public:
  virtual ~TurnRenderer() = default;
  // What a stream sends while the engine works (an SSE comment or ping event).
  virtual std::string heartbeat() const { return ": keep-alive\n\n"; }
  virtual bool start(ChunkWriter& /*out*/) { return true; }
  // The first engine event arrived: its trace says how much of the prompt the cache restored.
  virtual bool first_event(ChunkWriter& /*out*/, const engine::Event& /*ev*/) { return true; }
  virtual bool delta(ChunkWriter& out, const TurnDelta& d) = 0;
  // The stream's tail or the whole body.
  virtual bool finish(ChunkWriter& out, const TurnResult& r) = 0;
  // The engine failed or cancelled the turn.
  virtual void fail(ChunkWriter& out, const ApiError& err) = 0;
};

struct ChatTurn {
  ChatRequest request;
  chat::Prompt prompt;
  cache::CacheKey key;
  std::string id;     // the response id: logs and tool-call ids
  std::string model;  // the model name the response reports (ModelNames::resolve)
  // Tool-call ids are this and the call's index: "call_<token>0" (OpenAI), "toolu_<token>0".
  std::string call_id_prefix;
  const Backend* backend = nullptr;
  std::shared_ptr<engine::RequestChannel> channel;
  ServerMetrics* metrics = nullptr;
  bool log_text = false;  // --log-prompts
  std::unique_ptr<TurnRenderer> renderer;
  RequestTiming timing;

  // Writes the whole response (stream or not) to `out`.
  void run(ChunkWriter& out);
};

struct TextTurn {
  CompletionRequest request;
  std::string prompt_text;  // for echo
  ResponseMeta meta;
  const Backend* backend = nullptr;
  std::shared_ptr<engine::RequestChannel> channel;
  ServerMetrics* metrics = nullptr;
  bool log_text = false;  // --log-prompts
  RequestTiming timing;

  void run(ChunkWriter& out);
};

// A text as one JSON string literal, so a logged prompt stays on one line and cannot forge
// log lines.
std::string quoted_for_log(std::string_view text);

// Waits for the next engine event, calling out.keep_alive(heartbeat) while waiting. nullopt: the
// client is gone (the channel has been cancelled).
std::optional<engine::Event> wait_event(engine::RequestChannel& channel, ChunkWriter& out,
                                        std::string_view heartbeat);

// The engine events of one turn, pulled until its done event: keeps the client watched while the
// engine works (heartbeat), records the request's timing and the token, TTFT and inter-token
// metrics, and hands each event to `on_event` (false: the client is gone). Returns the done event;
// nullopt when the client left, after cancelling the sequence and counting it.
std::optional<engine::Event> pump_events(engine::RequestChannel& channel, ChunkWriter& out,
                                         std::string_view heartbeat, RequestTiming& timing,
                                         ServerMetrics* metrics,
                                         const std::function<bool(engine::Event&)>& on_event);

// The error a failed or cancelled engine event answers with.
ApiError finish_error(const engine::Event& done);

}  // namespace recur::server
