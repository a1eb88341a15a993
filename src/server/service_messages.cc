// Anthropic's Messages routes: POST /v1/messages and /v1/messages/count_tokens, through the shared
// chat pipeline; errors in Anthropic's shape.
#include <nlohmann/json.hpp>

#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/chat_turn.h"
#include "server/service.h"

namespace recur::server {

namespace {

HttpResponse anthropic_error(const ApiError& e) {
  return HttpResponse::error(e, ErrorShape::kAnthropic);
}

}  // namespace

HttpResponse Service::messages(const HttpRequest& http) {
  if (auto e = unavailable()) return anthropic_error(*e);
  if (auto e = check_anthropic_version(http.header("anthropic-version"))) {
    return anthropic_error(*e);
  }
  auto parsed = parse_messages_request(http.body, options_.limits);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return anthropic_error(*e);
  ChatRequest& request = std::get<ChatRequest>(parsed);
  const Conversation conversation = conversation_of(http, request.gen);
  const RequestIdentity identity = request_ids_.next("msg_");
  auto started = start_chat(http, std::move(request), identity, conversation);
  if (const ApiError* e = std::get_if<ApiError>(&started)) return anthropic_error(*e);
  auto turn = std::get<std::shared_ptr<ChatTurn>>(std::move(started));
  turn->call_id_prefix = "toolu_" + identity.token;
  turn->renderer =
      std::make_unique<AnthropicRenderer>(identity.id, turn->model, turn->request,
                                          static_cast<std::int64_t>(turn->prompt.tokens.size()));
  HttpResponse r = respond_turn(http, std::move(turn));
  r.headers.emplace_back("request-id", identity.id);
  return r;
}

HttpResponse Service::messages_count_tokens(const HttpRequest& http) {
  if (auto e = unavailable()) return anthropic_error(*e);
  if (auto e = check_anthropic_version(http.header("anthropic-version"))) {
    return anthropic_error(*e);
  }
  auto parsed = parse_messages_request(http.body, options_.limits);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return anthropic_error(*e);
  ChatRequest& req = std::get<ChatRequest>(parsed);
  auto model = resolve_model(req.gen.model);
  if (const ApiError* e = std::get_if<ApiError>(&model)) return anthropic_error(*e);
  apply_default_kwargs(req);
  auto prompt = render_prompt(chat_inputs(req));
  if (const ApiError* e = std::get_if<ApiError>(&prompt)) return anthropic_error(*e);
  const auto n = std::get<chat::Prompt>(prompt).tokens.size();
  return HttpResponse::json(200, nlohmann::json{{"input_tokens", n}}.dump());
}

}  // namespace recur::server
