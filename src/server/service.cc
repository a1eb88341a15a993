#include "server/service.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/chat_turn.h"
#include "server/openai_chat_renderer.h"
#include "server/tool_choice_grammar.h"
#include "util/hash.h"
#include "util/log.h"

namespace recur::server {

namespace {

// A streaming turn runs after the 200 and the SSE headers are sent; a non-streaming one runs here,
// in the handler, so its status is chosen once the outcome is known.
template <typename Turn>
HttpResponse respond(bool stream, const HttpRequest& http, std::shared_ptr<Turn> turn) {
  if (!stream) {
    HeldResponse held(http.client_gone, error_shape_for_path(http.path));
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

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpResponse respond_turn(const HttpRequest& http, std::shared_ptr<ChatTurn> turn) {
  // Read before the pointer moves into the call.
  const bool stream = turn->request.gen.stream;
  const std::string dropped = dropped_tools_header(turn->request.dropped_tools);
  HttpResponse r = respond(stream, http, std::move(turn));
  if (!dropped.empty()) r.headers.emplace_back(kDroppedToolsHeader, dropped);
  return r;
}

std::string api_key_identity(const HttpRequest& req) {
  std::string auth = req.header("authorization");
  // The x-api-key of Anthropic's clients names the same tenant as the bearer token of the same
  // key.
  if (auth.empty() && !req.header("x-api-key").empty()) auth = "Bearer " + req.header("x-api-key");
  return auth.empty() ? std::string() : fmt::format("{:016x}", hash64(auth, 0x6b6579));
}

std::string session_name(const HttpRequest& req, const GenerationFields& gen) {
  // X-Session-Id names the conversation where the body does not: the same header a reverse proxy
  // hashes on for session affinity (docs/operations.md).
  return gen.prompt_cache_key.empty() ? req.header("x-session-id") : gen.prompt_cache_key;
}

Conversation conversation_of(const HttpRequest& req, const GenerationFields& gen) {
  return {.tenant = api_key_identity(req), .session = session_name(req, gen)};
}

Service::Service(ServiceOptions options, ServerMetrics& metrics)
    : options_(std::move(options)), metrics_(metrics), response_store_(options_.response_store) {}

void Service::set_backend(Backend backend) {
  backend_ = std::move(backend);
  grammars_ = std::make_unique<GrammarCache>(*backend_.tokenizer);
  ready_.store(true, std::memory_order_release);
}

const Backend* Service::ready_backend() const {
  return ready_.load(std::memory_order_acquire) ? &backend_ : nullptr;
}

void Service::register_routes(HttpServer& http) {
  // The API routes answer without the /v1 prefix too: some clients are configured with a base
  // URL that lacks it.
  for (const std::string v1 : {"/v1", ""}) {
    http.post(v1 + "/chat/completions",
              [this](const HttpRequest& r) { return chat_completions(r); });
    http.post(v1 + "/completions", [this](const HttpRequest& r) { return completions(r); });
    http.post(v1 + "/messages", [this](const HttpRequest& r) { return messages(r); });
    http.post(v1 + "/messages/count_tokens",
              [this](const HttpRequest& r) { return messages_count_tokens(r); });
    http.post(v1 + "/responses", [this](const HttpRequest& r) { return responses_create(r); });
    const std::string responses = v1 + "/responses/";
    http.get_by_id({.prefix = responses},
                   [this](const HttpRequest& r) { return responses_get(r); });
    http.del_by_id({.prefix = responses},
                   [this](const HttpRequest& r) { return responses_delete(r); });
    http.get_by_id({.prefix = responses, .suffix = "/input_items"},
                   [this](const HttpRequest& r) { return responses_input_items(r); });
    http.get(v1 + "/models", [this](const HttpRequest& r) { return models(r); });
    http.get_by_id({.prefix = v1 + "/models/", .any_text = true},
                   [this](const HttpRequest& r) { return model_by_id(r); });
  }
  http.get("/health", [this](const HttpRequest& r) { return health(r); });
  http.allow_without_key("/health");
  http.get("/v1/cache/stats", [this](const HttpRequest& r) { return cache_stats(r); });
  http.post("/v1/cache/reset", [this](const HttpRequest& r) { return cache_reset(r); });
  http.get("/metrics", [this](const HttpRequest& r) { return metrics(r); });
}

Parsed<std::string> Service::resolve_model(const std::string& requested) const {
  if (auto name = options_.models.resolve(requested)) return *std::move(name);
  return unknown_model(requested, options_.models);
}

cache::CacheKey Service::cache_key(const Conversation& conversation, const GenerationFields& gen,
                                   std::uint64_t template_signature) const {
  cache::CacheKey key;
  // The tenant is an identity derived from the presented API key (never the key itself), plus
  // the request's cache_salt: either one differing keeps two requests' entries apart.
  key.tenant.api_key_identity = conversation.tenant;
  key.tenant.cache_salt = gen.cache_salt;
  key.bucket.model_id = options_.models.primary();
  key.bucket.template_signature = template_signature;
  key.session = cache::SessionKey::from_request(conversation.session, gen.user);
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
  const std::int64_t ctx = backend_.engine->options().ctx_size;
  r.max_tokens = gen.max_tokens.value_or(std::max<std::int64_t>(1, ctx - n_prompt));
  r.prompt = std::move(prompt);
  r.stop_strings = gen.stop;
  if (!gen.ignore_eos) r.stop_token_ids = backend_.stop_token_ids;
  return r;
}

namespace {

ApiError submit_error(const Status& s) {
  ApiError e = from_status(s, "messages");
  if (s.code() == StatusCode::kOutOfRange) e.code = "context_length_exceeded";
  return e;
}

}  // namespace

std::optional<ApiError> Service::unavailable() const {
  const Backend* be = ready_backend();
  if (be != nullptr && !draining_.load()) return std::nullopt;
  return overloaded(be ? "the server is shutting down" : "the model is loading", 2);
}

Status check_template_kwargs(std::string_view text) {
  if (text.empty()) return Status::ok();
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error(StatusCode::kInvalidArgument,
                 "--chat-template-kwargs must be a JSON object, e.g. '{{\"enable_thinking\": "
                 "false}}'; got '{}'",
                 text);
  }
  return Status::ok();
}

void Service::apply_default_kwargs(ChatRequest& req) const {
  if (options_.default_template_kwargs.empty()) return;
  auto merged = nlohmann::json::parse(options_.default_template_kwargs);
  if (!req.chat_template_kwargs_json.empty()) {
    const auto own = nlohmann::json::parse(req.chat_template_kwargs_json);
    for (const auto& [k, v] : own.items()) merged[k] = v;
  }
  req.chat_template_kwargs_json = merged.dump();
}

chat::ChatInputs Service::chat_inputs(const ChatRequest& req) const {
  chat::ChatInputs in = req.inputs();
  // Breakpoints only matter to a cache that keeps them.
  if (backend_.cache != nullptr) in.cache_breakpoints = req.cache_breakpoints;
  return in;
}

Parsed<chat::Prompt> Service::render_prompt(const chat::ChatInputs& in) const {
  if (backend_.formatter == nullptr) {
    return invalid_request(
        "messages", "this model has no chat template; use /v1/completions with a raw prompt");
  }
  auto prompt = backend_.formatter->build_prompt(in);
  if (!prompt) return invalid_request("messages", prompt.status().message());
  return std::move(prompt).value();
}

Parsed<std::shared_ptr<ChatTurn>> Service::start_chat(const HttpRequest& http, ChatRequest request,
                                                      const RequestIdentity& identity,
                                                      const Conversation& conversation) {
  auto model = resolve_model(request.gen.model);
  if (const ApiError* e = as_error(model)) return *e;
  auto turn = std::make_shared<ChatTurn>();
  turn->model = std::get<std::string>(std::move(model));
  turn->timing.received = http.received_at;
  turn->timing.parsed = RequestTiming::Clock::now();
  turn->request = std::move(request);
  apply_default_kwargs(turn->request);
  const ChatRequest& req = turn->request;
  const chat::ChatInputs inputs = chat_inputs(req);
  auto prompt = render_prompt(inputs);
  if (const ApiError* e = as_error(prompt)) return *e;
  turn->prompt = std::move(std::get<chat::Prompt>(prompt));
  if (backend_.formatter->harmony()) {
    // A forced call or output format: the prompt goes on with the message's header.
    auto prefill = harmony_prefill(req);
    if (const ApiError* e = as_error(prefill)) return *e;
    const std::string& header = std::get<std::string>(prefill);
    turn->prompt.text += header;
    backend_.tokenizer->encode_into(header, {.parse_special = true}, turn->prompt.tokens);
  }
  turn->timing.render_s = turn->prompt.render_s;
  turn->timing.tokenize_s = turn->prompt.tokenize_s;
  turn->key = cache_key(conversation, req.gen, backend_.formatter->signature(inputs));
  turn->id = identity.id;
  turn->call_id_prefix = "call_" + identity.token;
  turn->backend = &backend_;
  turn->metrics = &metrics_;
  turn->log_text = options_.log_prompts;
  if (options_.log_prompts) {
    log::debug("prompt id={} text={}", turn->id, quoted_for_log(turn->prompt.text));
  }
  if (!req.dropped_tools.empty()) {
    log::info("request {}: tools left out of the prompt (this server cannot run them): {}",
              turn->id, dropped_tools_header(req.dropped_tools));
  }
  if (auto e = check_logit_bias(req.gen)) return *e;
  auto constraint = constraint_for(req, turn->prompt);
  if (const ApiError* e = as_error(constraint)) return *e;
  engine::GenerationRequest ereq = engine_request(req.gen, identity, turn->prompt.tokens);
  ereq.constraint = std::get<std::shared_ptr<const engine::ConstraintSpec>>(std::move(constraint));
  ereq.history_boundary = turn->prompt.history_boundary;
  ereq.shared_boundary = turn->prompt.shared_boundary;
  ereq.cache_points = turn->prompt.cache_points;
  ereq.cache_key = turn->key;
  turn->timing.submitted = RequestTiming::Clock::now();
  auto channel = backend_.engine->submit(std::move(ereq));
  if (!channel) return submit_error(channel.status());
  turn->channel = std::move(channel).value();
  return turn;
}

HttpResponse Service::chat_completions(const HttpRequest& http) {
  if (auto e = unavailable()) return HttpResponse::error(*e);
  auto parsed = parse_chat_request(http.body, options_.limits);
  if (const ApiError* e = as_error(parsed)) return HttpResponse::error(*e);
  ChatRequest& request = std::get<ChatRequest>(parsed);
  const Conversation conversation = conversation_of(http, request.gen);
  const RequestIdentity identity = request_ids_.next("chatcmpl-");
  auto started = start_chat(http, std::move(request), identity, conversation);
  if (const ApiError* e = as_error(started)) return HttpResponse::error(*e);
  auto turn = std::get<std::shared_ptr<ChatTurn>>(std::move(started));
  ResponseMeta meta{.id = identity.id, .model = turn->model, .created = unix_now()};
  turn->renderer =
      std::make_unique<OpenAIChatRenderer>(std::move(meta), turn->request, *backend_.tokenizer);
  return respond_turn(http, std::move(turn));
}

HttpResponse Service::completions(const HttpRequest& http) {
  if (auto e = unavailable()) return HttpResponse::error(*e);
  const Backend* be = &backend_;
  auto parsed = parse_completion_request(http.body, options_.limits);
  if (const ApiError* e = as_error(parsed)) return HttpResponse::error(*e);
  auto turn = std::make_shared<TextTurn>();
  turn->timing.received = http.received_at;
  turn->timing.parsed = RequestTiming::Clock::now();
  turn->request = std::move(std::get<CompletionRequest>(parsed));
  CompletionRequest& req = turn->request;
  auto model = resolve_model(req.gen.model);
  if (const ApiError* e = as_error(model)) return HttpResponse::error(*e);
  std::vector<engine::TokenId> tokens;
  if (auto* text = std::get_if<std::string>(&req.prompt)) {
    turn->prompt_text = *text;
    const auto t0 = RequestTiming::Clock::now();
    tokens = be->tokenizer->encode(*text, {.parse_special = true});
    turn->timing.tokenize_s =
        std::chrono::duration<double>(RequestTiming::Clock::now() - t0).count();
  } else {
    tokens = std::get<std::vector<std::int32_t>>(req.prompt);
    turn->prompt_text = be->tokenizer->decode(tokens);
  }
  const RequestIdentity identity = request_ids_.next("cmpl-");
  turn->meta = {
      .id = identity.id, .model = std::get<std::string>(std::move(model)), .created = unix_now()};
  turn->backend = be;
  turn->metrics = &metrics_;
  turn->log_text = options_.log_prompts;
  if (options_.log_prompts) {
    log::debug("prompt id={} text={}", turn->meta.id, quoted_for_log(turn->prompt_text));
  }
  if (auto e = check_logit_bias(req.gen)) return HttpResponse::error(*e);
  auto constraint = constraint_for(req.output_format);
  if (const ApiError* e = as_error(constraint)) return HttpResponse::error(*e);
  engine::GenerationRequest ereq = engine_request(req.gen, identity, std::move(tokens));
  ereq.constraint = std::get<std::shared_ptr<const engine::ConstraintSpec>>(std::move(constraint));
  ereq.cache_key = cache_key(conversation_of(http, req.gen), req.gen, /*template_signature=*/0);
  turn->timing.submitted = RequestTiming::Clock::now();
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
