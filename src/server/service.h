// The OpenAI-compatible routes over one loaded model: chat and text completions (streaming or
// not), models, health, cache stats/reset and metrics. Turns typed requests into engine requests
// (prompt, history boundary, cache key), engine events into OpenAI responses, and queues the
// next-turn warm-up after a healthy finish. Thread-safe: HTTP workers call the handlers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/prompt_cache.h"
#include "chat/formatter.h"
#include "engine/engine.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/request_ids.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {

struct ServiceOptions {
  std::string model_id;  // what /v1/models reports and requests may name
  RequestLimits limits;
  std::int64_t ctx_size = 8192;
  bool log_prompts = false;  // --log-prompts: prompt and completion text in debug logs
};

// What the routes serve once the model is loaded. Everything must outlive the service.
struct Backend {
  engine::Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const chat::ChatFormatter* formatter = nullptr;  // null: no chat template (chat route 400s)
  cache::PromptCache* cache = nullptr;             // null: --no-prompt-cache
  std::vector<engine::TokenId> stop_token_ids;
};

class Service {
 public:
  Service(ServiceOptions options, ServerMetrics& metrics);
  // Routes answer 503 (and /health 503) until set_backend(); then they serve.
  void register_routes(HttpServer& http);
  void set_backend(Backend backend);
  // Stops new work: requests get 503 from now on (graceful shutdown).
  void set_draining() { draining_.store(true); }

 private:
  HttpResponse chat_completions(const HttpRequest& req);
  HttpResponse completions(const HttpRequest& req);
  HttpResponse models(const HttpRequest& req) const;
  HttpResponse health(const HttpRequest& req) const;
  HttpResponse cache_stats(const HttpRequest& req) const;
  HttpResponse cache_reset(const HttpRequest& req);
  HttpResponse metrics(const HttpRequest& req) const;

  const Backend* ready_backend() const;
  std::optional<ApiError> check_model(const std::string& requested) const;
  cache::CacheKey cache_key(const HttpRequest& req, const GenerationFields& gen,
                            std::uint64_t template_signature) const;
  engine::GenerationRequest engine_request(const GenerationFields& gen,
                                           const RequestIdentity& identity,
                                           std::vector<engine::TokenId> prompt) const;

  ServiceOptions options_;
  ServerMetrics& metrics_;
  Backend backend_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  RequestIds request_ids_;
};

}  // namespace recur::server
