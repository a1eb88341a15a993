// One chat completion after admission: pulls engine events, splits reasoning from content, finds
// tool calls, writes SSE chunks or one JSON body, and afterwards queues the next-turn warm-up.
// Heartbeats (SSE comments, or JSON-legal leading spaces) while the engine works let a client
// that went away be noticed within a fraction of a second, so its sequence is freed.
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
  bool warmup = true;
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

// Waits for the next engine event, writing `heartbeat` to `out` while waiting. nullopt: the client
// is gone (the channel has been cancelled).
std::optional<engine::Event> wait_event(engine::RequestChannel& channel, ChunkWriter& out,
                                        std::string_view heartbeat);

}  // namespace recur::server
