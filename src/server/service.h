// The HTTP routes over one loaded model: OpenAI's chat and text completions and Responses,
// Anthropic's Messages (streaming or not), models, health, cache stats/reset and metrics. Each
// chat-shaped API parses into one ChatRequest and goes through one pipeline (start_chat: prompt,
// history boundary, cache key, engine request; ChatTurn: events, reasoning, tool calls, warm-up);
// only parsing and rendering differ, a file pair per API. Thread-safe: HTTP workers call the
// handlers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/prompt_cache.h"
#include "chat/formatter.h"
#include "engine/engine.h"
#include "server/grammar_cache.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/model_names.h"
#include "server/openai_request.h"
#include "server/request_ids.h"
#include "server/response_store.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {

struct ServiceOptions {
  ModelNames models{std::string("recur")};  // what /v1/models reports and requests may name
  RequestLimits limits;
  bool log_prompts = false;            // --log-prompts: prompt and completion text in debug logs
  ResponseStoreLimits response_store;  // what /v1/responses keeps for previous_response_id
  // --chat-template-kwargs: a JSON object of template variables every chat request gets unless
  // it sets them itself (e.g. {"enable_thinking": false}); "" for none. Checked at startup.
  std::string default_template_kwargs;
};

// Whether `text` is a JSON object (the --chat-template-kwargs check); the error says what is wrong.
Status check_template_kwargs(std::string_view text);

// What the routes serve once the model is loaded. Everything must outlive the service.
struct Backend {
  engine::Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const chat::ChatFormatter* formatter = nullptr;  // null: no chat template (chat route 400s)
  cache::PromptCache* cache = nullptr;             // null: --no-prompt-cache
  std::vector<engine::TokenId> stop_token_ids;
};

struct ChatTurn;

// Whose conversation a request is in, worked out once per request from its headers and body: the
// tenant and session of its cache entries, and of the responses /v1/responses stores.
struct Conversation {
  std::string tenant;   // api_key_identity(): "" without a key
  std::string session;  // the session_name(), or the one a Responses chain inherits; "": none
};

// Seconds since the Unix epoch: the `created` of responses.
std::int64_t unix_now();

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
  HttpResponse messages(const HttpRequest& req);               // service_messages.cc
  HttpResponse messages_count_tokens(const HttpRequest& req);  // service_messages.cc
  HttpResponse responses_create(const HttpRequest& req);       // service_responses.cc
  HttpResponse responses_get(const HttpRequest& req);          // service_responses.cc
  HttpResponse responses_delete(const HttpRequest& req);       // service_responses.cc
  HttpResponse responses_input_items(const HttpRequest& req);  // service_responses.cc
  HttpResponse models(const HttpRequest& req) const;           // service_models.cc
  HttpResponse model_by_id(const HttpRequest& req) const;      // service_models.cc
  HttpResponse health(const HttpRequest& req) const;
  HttpResponse cache_stats(const HttpRequest& req) const;
  HttpResponse cache_reset(const HttpRequest& req);
  HttpResponse metrics(const HttpRequest& req) const;

  const Backend* ready_backend() const;
  // The 503 while loading or draining; nullopt when requests are served.
  std::optional<ApiError> unavailable() const;
  // The shared chat pipeline: model check, prompt, cache key, engine submission. The caller sets
  // the turn's renderer and answers with respond_turn().
  Parsed<std::shared_ptr<ChatTurn>> start_chat(const HttpRequest& http, ChatRequest request,
                                               const RequestIdentity& identity,
                                               const Conversation& conversation);
  // What the formatter renders for a request: its inputs, with its cache breakpoints where a
  // cache keeps them.
  chat::ChatInputs chat_inputs(const ChatRequest& request) const;
  Parsed<chat::Prompt> render_prompt(const chat::ChatInputs& in) const;
  // The grammar the engine enforces for this turn (service_constraint.cc); null: free text.
  Parsed<std::shared_ptr<const engine::ConstraintSpec>> constraint_for(const ChatRequest& request,
                                                                       const chat::Prompt& prompt);
  // An output format alone (text completions: no template, no reasoning block); null: free.
  Parsed<std::shared_ptr<const engine::ConstraintSpec>> constraint_for(const OutputFormat& format);
  std::optional<ApiError> check_logit_bias(const GenerationFields& gen) const;
  // The request's chat_template_kwargs over the server's defaults.
  void apply_default_kwargs(ChatRequest& request) const;
  // The name a response reports for the request's `model`, or the 404 of a name not served.
  Parsed<std::string> resolve_model(const std::string& requested) const;
  cache::CacheKey cache_key(const Conversation& conversation, const GenerationFields& gen,
                            std::uint64_t template_signature) const;
  engine::GenerationRequest engine_request(const GenerationFields& gen,
                                           const RequestIdentity& identity,
                                           std::vector<engine::TokenId> prompt) const;

  ServiceOptions options_;
  ServerMetrics& metrics_;
  Backend backend_;
  std::unique_ptr<GrammarCache> grammars_;  // made by set_backend
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  RequestIds request_ids_;
  ResponseStore response_store_;
  std::int64_t started_at_ = unix_now();  // the `created` of /v1/models
};

// The response of a started turn: run here for a held body, after the SSE headers for a stream.
HttpResponse respond_turn(const HttpRequest& http, std::shared_ptr<ChatTurn> turn);

// Who presented which API key (`Authorization: Bearer` or `x-api-key`), as an identity that never
// reveals the key: "" without one. The tenant of cache entries and stored responses.
std::string api_key_identity(const HttpRequest& req);

// The conversation a request names: its prompt_cache_key, else its X-Session-Id header; "" for
// none.
std::string session_name(const HttpRequest& req, const GenerationFields& gen);

// Its tenant and the session it names.
Conversation conversation_of(const HttpRequest& req, const GenerationFields& gen);

}  // namespace recur::server
