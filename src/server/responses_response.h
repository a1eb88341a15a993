// OpenAI Responses output for a chat turn: the `response` object (output items: a reasoning item,
// a message with output_text, function_call items; usage with input_tokens_details.cached_tokens)
// or the SSE events (response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.reasoning_text.delta, response.output_text.delta,
// response.function_call_arguments.delta/done, the matching .done events, response.completed or
// response.incomplete; response.failed on failure). A stored response is put in the ResponseStore
// before the client can see it, so a follow-up naming it always finds it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/chat_turn.h"
#include "server/response_store.h"
#include "server/responses_request.h"

namespace recur::server {

// What the response object repeats of its request.
struct ResponseEcho {
  std::string id;
  std::string token;  // RequestIdentity::token: the items' ids are made of it
  std::string model;
  std::int64_t created_at = 0;
  std::optional<std::string> instructions;
  std::string previous_response_id;
  bool store = true;
  std::string tools_json = "[]";
  std::string tool_choice_json = "\"auto\"";
  std::string metadata_json = "{}";
  std::optional<std::int64_t> max_output_tokens;
  double temperature = 1.0;
  double top_p = 1.0;
  bool parallel_tool_calls = true;
  std::string user;
  OutputFormat format;                         // text.format
  std::vector<NamespacedFunction> namespaced;  // calls to these name their namespace
};
ResponseEcho response_echo(const ResponsesRequest& req, std::string id, std::string model,
                           std::int64_t created_at);

// Where a finished response is kept (store: true).
struct ResponseStoring {
  ResponseStore* store = nullptr;  // null: not kept
  std::string tenant;
  std::string session;
  std::vector<chat::Message> input_messages;  // this turn's new messages (no instructions)
  std::string input_json;                     // the request's `input` as sent
  std::shared_ptr<const StoredResponse> parent;
};

// The id of the response an output item id belongs to (its reasoning, message and function call
// items carry its token: rs_TOKEN, msg_TOKEN, fc_TOKEN_INDEX of resp_TOKEN); "" for an id of
// another form.
std::string response_id_of_item(std::string_view item_id);
// The output item `item_id` of a stored response body, as JSON text; nullopt when it has none.
std::optional<std::string> output_item_of(const std::string& response_json,
                                          const std::string& item_id);

class ResponsesRenderer final : public TurnRenderer {
 public:
  ResponsesRenderer(ResponseEcho echo, bool stream, ResponseStoring storing);
  bool start(ChunkWriter& out) override;
  bool delta(ChunkWriter& out, const TurnDelta& d) override;
  bool finish(ChunkWriter& out, const TurnResult& r) override;
  void fail(ChunkWriter& out, const ApiError& err) override;

 private:
  enum class Item { kNone, kReasoning, kMessage };
  std::string event(const std::string& type, nlohmann::ordered_json data);
  std::string open_item(Item kind);
  std::string close_item();
  void keep(const TurnResult& r, const std::string& response_json);

  ResponseEcho echo_;
  bool stream_;
  ResponseStoring storing_;
  std::int64_t sequence_ = 0;
  Item open_ = Item::kNone;
  int output_index_ = -1;
  bool message_seen_ = false;
  std::string item_text_;  // the open item's text so far
  std::vector<nlohmann::ordered_json> done_items_;
};

}  // namespace recur::server
