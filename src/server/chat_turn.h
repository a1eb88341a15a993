// One chat completion after admission: pulls engine events, splits reasoning from content, finds
// tool calls, writes SSE chunks or one JSON body, and afterwards queues the next-turn warm-up.
// While the engine works the writer is asked every quarter second whether the client is still
// there (a stream sends an SSE comment; a held JSON body checks the connection), so a client that
// went away is noticed within a fraction of a second and its sequence freed.
#pragma once

#include <memory>
#include <string>

#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/service.h"

namespace recur::server {

struct ChatTurn {
  ChatRequest request;
  chat::Prompt prompt;
  cache::CacheKey key;
  ResponseMeta meta;
  const Backend* backend = nullptr;
  std::shared_ptr<engine::RequestChannel> channel;
  ServerMetrics* metrics = nullptr;
  bool log_text = false;  // --log-prompts

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

  void run(ChunkWriter& out);
};

// A text as one JSON string literal, so a logged prompt stays on one line and cannot forge
// log lines.
std::string quoted_for_log(std::string_view text);

// Waits for the next engine event, calling out.keep_alive(heartbeat) while waiting. nullopt: the
// client is gone (the channel has been cancelled).
std::optional<engine::Event> wait_event(engine::RequestChannel& channel, ChunkWriter& out,
                                        std::string_view heartbeat);

}  // namespace recur::server
