// OpenAI's Responses routes: POST /v1/responses through the shared chat pipeline, with
// previous_response_id continued from the ResponseStore; GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items.
#include <nlohmann/json.hpp>

#include "server/chat_turn.h"
#include "server/responses_input_items.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server/service.h"

namespace recur::server {

namespace {

ApiError response_not_found(const std::string& id, const char* param) {
  ApiError e =
      not_found(fmt::format("response '{}' not found: unknown, deleted, stored with "
                            "store: false, another API key's, older than "
                            "--responses-store-ttl or evicted by "
                            "--responses-store-bytes",
                            id));
  e.param = param;
  return e;
}

}  // namespace

HttpResponse Service::responses_create(const HttpRequest& http) {
  if (auto e = unavailable()) return HttpResponse::error(*e);
  // The tenant is needed to parse the body (item references); the session once it is parsed.
  Conversation conversation{.tenant = api_key_identity(http)};
  // item_reference: an output item of one of this tenant's stored responses.
  const ItemResolver resolve = [&](const std::string& item_id) -> std::optional<std::string> {
    const std::string response_id = response_id_of_item(item_id);
    if (response_id.empty()) return std::nullopt;
    auto stored = response_store_.get(response_id, conversation.tenant);
    if (!stored) return std::nullopt;
    return output_item_of(stored->response_json, item_id);
  };
  auto parsed = parse_responses_request(http.body, options_.limits, resolve);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return HttpResponse::error(*e);
  ResponsesRequest& req = std::get<ResponsesRequest>(parsed);
  const RequestIdentity identity = request_ids_.next("resp_");

  std::shared_ptr<const StoredResponse> parent;
  if (!req.previous_response_id.empty()) {
    parent = response_store_.get(req.previous_response_id, conversation.tenant);
    if (!parent) {
      return HttpResponse::error(
          response_not_found(req.previous_response_id, "previous_response_id"));
    }
  }
  // A chain is one conversation: its cache session is the client's key or its first response's
  // session, so each turn finds the snapshot its predecessor left. Without either, a request
  // is in the tenant's anonymous session, as on chat completions: a stateless conversation
  // (store: false, its output echoed back as input) finds its previous turn's snapshot there by
  // its exact token prefix.
  conversation.session = session_name(http, req.chat.gen);
  if (conversation.session.empty() && parent) conversation.session = parent->session;
  ResponseStoring storing;
  if (req.store) {
    storing = {.store = &response_store_,
               .tenant = conversation.tenant,
               .session = conversation.session,
               .input_messages = req.chat.messages,
               .input_json = std::move(req.input_json),
               .parent = parent};
  }
  std::vector<chat::Message> messages;
  if (req.instructions) {
    messages.push_back(chat::Message{.role = "system", .content = *req.instructions});
  }
  if (parent) {
    std::vector<chat::Message> history = parent->history();
    messages.insert(messages.end(), history.begin(), history.end());
  }
  messages.insert(messages.end(), req.chat.messages.begin(), req.chat.messages.end());
  if (messages.size() > options_.limits.max_messages) {
    return HttpResponse::error(invalid_request(
        "input",
        fmt::format("the conversation through previous_response_id has {} messages; at most {} "
                    "are allowed",
                    messages.size(), options_.limits.max_messages),
        "limit_exceeded"));
  }
  req.chat.messages = std::move(messages);

  ResponseEcho echo = response_echo(req, identity.id, "", unix_now());
  const bool stream = req.chat.gen.stream;
  auto started = start_chat(http, std::move(req.chat), identity, conversation);
  if (const ApiError* e = std::get_if<ApiError>(&started)) {
    ApiError err = *e;
    if (err.param == "messages") err.param = "input";
    return HttpResponse::error(err);
  }
  auto turn = std::get<std::shared_ptr<ChatTurn>>(std::move(started));
  echo.model = turn->model;
  echo.token = identity.token;
  turn->renderer = std::make_unique<ResponsesRenderer>(std::move(echo), stream, std::move(storing));
  return respond_turn(http, std::move(turn));
}

HttpResponse Service::responses_get(const HttpRequest& http) {
  const std::string& id = http.path_id;
  auto r = response_store_.get(id, api_key_identity(http));
  if (!r) return HttpResponse::error(response_not_found(id, ""));
  return HttpResponse::json(200, r->response_json);
}

HttpResponse Service::responses_delete(const HttpRequest& http) {
  const std::string& id = http.path_id;
  if (!response_store_.erase(id, api_key_identity(http))) {
    return HttpResponse::error(response_not_found(id, ""));
  }
  return HttpResponse::json(
      200, nlohmann::json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump());
}

HttpResponse Service::responses_input_items(const HttpRequest& http) {
  const std::string& id = http.path_id;
  auto query = parse_input_items_query(http.query);
  if (const ApiError* e = std::get_if<ApiError>(&query)) return HttpResponse::error(*e);
  auto r = response_store_.get(id, api_key_identity(http));
  if (!r) return HttpResponse::error(response_not_found(id, ""));
  // The item ids are made of the response's token: its id without "resp_".
  const std::string_view token = std::string_view(r->id).substr(r->id.find('_') + 1);
  auto page = input_items_page(r->input_json, token, std::get<InputItemsQuery>(query));
  if (const ApiError* e = std::get_if<ApiError>(&page)) return HttpResponse::error(*e);
  return HttpResponse::json(200, std::get<std::string>(std::move(page)));
}

}  // namespace recur::server
