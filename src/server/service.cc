#include "server/service.h"

#include <chrono>

#include "server/chat_turn.h"
#include "util/hash.h"
#include "util/log.h"

namespace recur::server {

namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <typename T>
const ApiError* as_error(const Parsed<T>& p) {
  return std::get_if<ApiError>(&p);
}

// A streaming turn runs after the 200 and the SSE headers are sent; a non-streaming one runs here,
// in the handler, so its status is chosen once the outcome is known.
template <typename Turn>
HttpResponse respond(bool stream, const HttpRequest& http, std::shared_ptr<Turn> turn) {
  if (!stream) {
    HeldResponse held(http.client_gone);
    turn->run(held);
    return held.take();
  }
  HttpResponse r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.stream = [turn](ChunkWriter& w) { turn->run(w); };
  return r;
}

}  // namespace

Service::Service(ServiceOptions options, ServerMetrics& metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void Service::set_backend(Backend backend) {
  backend_ = std::move(backend);
  ready_.store(true, std::memory_order_release);
}

const Backend* Service::ready_backend() const {
  return ready_.load(std::memory_order_acquire) ? &backend_ : nullptr;
}

void Service::register_routes(HttpServer& http) {
  http.post("/v1/chat/completions", [this](const HttpRequest& r) { return chat_completions(r); });
  http.post("/v1/completions", [this](const HttpRequest& r) { return completions(r); });
  http.get("/v1/models", [this](const HttpRequest& r) { return models(r); });
  http.get("/health", [this](const HttpRequest& r) { return health(r); });
  http.allow_without_key("/health");
  http.get("/v1/cache/stats", [this](const HttpRequest& r) { return cache_stats(r); });
  http.post("/v1/cache/reset", [this](const HttpRequest& r) { return cache_reset(r); });
  http.get("/metrics", [this](const HttpRequest& r) { return metrics(r); });
}

std::optional<ApiError> Service::check_model(const std::string& requested) const {
  if (requested.empty() || requested == options_.model_id) return std::nullopt;
  return not_found(fmt::format("model '{}' is not served here; this server serves '{}'", requested,
                               options_.model_id),
                   "model_not_found");
}

cache::CacheKey Service::cache_key(const HttpRequest& req, const GenerationFields& gen,
                                   std::uint64_t template_signature) const {
  cache::CacheKey key;
  // The tenant is an identity derived from the presented API key (never the key itself), plus
  // the request's cache_salt: either one differing keeps two requests' entries apart.
  std::string auth = req.header("authorization");
  if (!auth.empty()) key.tenant.api_key_identity = fmt::format("{:016x}", hash64(auth, 0x6b6579));
  key.tenant.cache_salt = gen.cache_salt;
  key.bucket.model_id = options_.model_id;
  key.bucket.template_signature = template_signature;
  // X-Session-Id names the conversation where the body does not: the same header a reverse proxy
  // hashes on for session affinity (docs/operations.md).
  const std::string header_key = req.header("x-session-id");
  key.session = cache::SessionKey::from_request(
      gen.prompt_cache_key.empty() ? std::string_view(header_key) : gen.prompt_cache_key, gen.user);
  return key;
}

engine::GenerationRequest Service::engine_request(const GenerationFields& gen,
                                                  const RequestIdentity& identity,
                                                  std::vector<engine::TokenId> prompt) const {
  engine::GenerationRequest r;
  r.id = identity.id;
  r.sampling = gen.sampling;
  if (!gen.seed_given) r.sampling.seed = identity.seed;
  const auto n_prompt = static_cast<std::int64_t>(prompt.size());
  r.max_tokens = gen.max_tokens.value_or(std::max<std::int64_t>(1, options_.ctx_size - n_prompt));
  r.prompt = std::move(prompt);
  r.stop_strings = gen.stop;
  r.stop_token_ids = backend_.stop_token_ids;
  return r;
}

namespace {

ApiError submit_error(const Status& s) {
  ApiError e = from_status(s, "messages");
  if (s.code() == StatusCode::kOutOfRange) e.code = "context_length_exceeded";
  return e;
}

}  // namespace

HttpResponse Service::chat_completions(const HttpRequest& http) {
  const Backend* be = ready_backend();
  if (be == nullptr || draining_.load()) {
    return HttpResponse::error(
        overloaded(be ? "the server is shutting down" : "the model is loading", 2));
  }
  auto parsed = parse_chat_request(http.body, options_.limits);
  if (const ApiError* e = as_error(parsed)) return HttpResponse::error(*e);
  auto turn = std::make_shared<ChatTurn>();
  turn->request = std::move(std::get<ChatRequest>(parsed));
  ChatRequest& req = turn->request;
  if (auto e = check_model(req.gen.model)) return HttpResponse::error(*e);
  if (be->formatter == nullptr) {
    return HttpResponse::error(invalid_request(
        "messages", "this model has no chat template; use /v1/completions with a raw prompt"));
  }
  chat::ChatInputs in{.messages = req.messages,
                      .tools_json = req.tools_json,
                      .kwargs_json = req.chat_template_kwargs_json};
  auto prompt = be->formatter->build_prompt(in);
  if (!prompt) return HttpResponse::error(invalid_request("messages", prompt.status().message()));
  turn->prompt = std::move(prompt).value();
  turn->key = cache_key(http, req.gen, be->formatter->signature(in));
  const RequestIdentity identity = request_ids_.next("chatcmpl");
  turn->meta = {.id = identity.id, .model = options_.model_id, .created = unix_now()};
  turn->backend = be;
  turn->metrics = &metrics_;
  turn->log_text = options_.log_prompts;
  if (options_.log_prompts) {
    log::debug("prompt id={} text={}", turn->meta.id, quoted_for_log(turn->prompt.text));
  }
  engine::GenerationRequest ereq = engine_request(req.gen, identity, turn->prompt.tokens);
  ereq.history_boundary = turn->prompt.history_boundary;
  ereq.cache_key = turn->key;
  auto channel = be->engine->submit(std::move(ereq));
  if (!channel) return HttpResponse::error(submit_error(channel.status()));
  turn->channel = std::move(channel).value();
  return respond(req.gen.stream, http, std::move(turn));
}

HttpResponse Service::completions(const HttpRequest& http) {
  const Backend* be = ready_backend();
  if (be == nullptr || draining_.load()) {
    return HttpResponse::error(
        overloaded(be ? "the server is shutting down" : "the model is loading", 2));
  }
  auto parsed = parse_completion_request(http.body, options_.limits);
  if (const ApiError* e = as_error(parsed)) return HttpResponse::error(*e);
  auto turn = std::make_shared<TextTurn>();
  turn->request = std::move(std::get<CompletionRequest>(parsed));
  CompletionRequest& req = turn->request;
  if (auto e = check_model(req.gen.model)) return HttpResponse::error(*e);
  std::vector<engine::TokenId> tokens;
  if (auto* text = std::get_if<std::string>(&req.prompt)) {
    turn->prompt_text = *text;
    tokens = be->tokenizer->encode(*text, {.parse_special = true});
  } else {
    tokens = std::get<std::vector<std::int32_t>>(req.prompt);
    turn->prompt_text = be->tokenizer->decode(tokens);
  }
  const RequestIdentity identity = request_ids_.next("cmpl");
  turn->meta = {.id = identity.id, .model = options_.model_id, .created = unix_now()};
  turn->backend = be;
  turn->metrics = &metrics_;
  turn->log_text = options_.log_prompts;
  if (options_.log_prompts) {
    log::debug("prompt id={} text={}", turn->meta.id, quoted_for_log(turn->prompt_text));
  }
  engine::GenerationRequest ereq = engine_request(req.gen, identity, std::move(tokens));
  ereq.cache_key = cache_key(http, req.gen, /*template_signature=*/0);
  auto channel = be->engine->submit(std::move(ereq));
  if (!channel) {
    ApiError e = submit_error(channel.status());
    e.param = e.param == "messages" ? "prompt" : e.param;
    return HttpResponse::error(e);
  }
  turn->channel = std::move(channel).value();
  return respond(req.gen.stream, http, std::move(turn));
}

}  // namespace recur::server
