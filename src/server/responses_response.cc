#include "server/responses_response.h"

#include <nlohmann/json.hpp>

#include "server/json_fields.h"
#include "server/recur_fields.h"
#include "util/log.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

json parsed_or_null(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

json responses_usage(const TurnResult& r) {
  const engine::Usage& u = r.usage;
  return json{{"input_tokens", u.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
              {"output_tokens", u.completion_tokens},
              {"output_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

// Item ids have OpenAI's prefixes and the response's unique token.
std::string reasoning_id(const ResponseEcho& e) { return "rs_" + e.token; }
std::string message_id(const ResponseEcho& e) { return "msg_" + e.token; }
std::string call_item_id(const ResponseEcho& e, size_t i) {
  return fmt::format("fc_{}_{}", e.token, i);
}

json reasoning_item(const ResponseEcho& e, const std::string& text, const char* status) {
  json content = json::array();
  if (!text.empty() || std::string_view(status) == "completed") {
    content.push_back(json{{"type", "reasoning_text"}, {"text", text}});
  }
  return json{{"id", reasoning_id(e)},
              {"type", "reasoning"},
              {"summary", json::array()},
              {"content", content},
              {"status", status}};
}

json output_text_part(const std::string& text) {
  return json{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
}

json message_item(const ResponseEcho& e, const std::string& text, const char* status) {
  json content = json::array();
  if (std::string_view(status) == "completed") content.push_back(output_text_part(text));
  return json{{"id", message_id(e)},
              {"type", "message"},
              {"status", status},
              {"role", "assistant"},
              {"content", content}};
}

// A call of a namespaced function names its namespace and the function as the client declared
// them.
const NamespacedFunction* namespaced(const ResponseEcho& e, const std::string& flat) {
  for (const auto& f : e.namespaced) {
    if (f.flat == flat) return &f;
  }
  return nullptr;
}

json call_item(const ResponseEcho& e, size_t i, const chat::ToolCall& c, const char* status) {
  const NamespacedFunction* ns = namespaced(e, c.name);
  json item = {{"id", call_item_id(e, i)},
               {"type", "function_call"},
               {"status", status},
               {"call_id", c.id},
               {"name", ns ? ns->name : c.name}};
  if (ns) item["namespace"] = ns->ns;
  item["arguments"] = c.arguments_json;
  return item;
}

// The output items of a finished turn, in the order a stream announces them.
std::vector<json> output_items(const ResponseEcho& e, const TurnResult& r) {
  std::vector<json> items;
  if (r.reasoning) items.push_back(reasoning_item(e, *r.reasoning, "completed"));
  if (!r.content.empty() || r.tool_calls.empty()) {
    items.push_back(message_item(e, r.content, "completed"));
  }
  for (size_t i = 0; i < r.tool_calls.size(); ++i) {
    items.push_back(call_item(e, i, r.tool_calls[i], "completed"));
  }
  return items;
}

json response_object(const ResponseEcho& e, const char* status, json output, json usage) {
  json r = {{"id", e.id},
            {"object", "response"},
            {"created_at", e.created_at},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"instructions", e.instructions ? json(*e.instructions) : json(nullptr)},
            {"max_output_tokens", e.max_output_tokens ? json(*e.max_output_tokens) : json(nullptr)},
            {"model", e.model},
            {"output", std::move(output)},
            {"parallel_tool_calls", e.parallel_tool_calls},
            {"previous_response_id",
             e.previous_response_id.empty() ? json(nullptr) : json(e.previous_response_id)},
            {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
            {"store", e.store},
            {"temperature", e.temperature},
            {"text", {{"format", responses_text_format(e.format)}}},
            {"tool_choice", parsed_or_null(e.tool_choice_json)},
            {"tools", parsed_or_null(e.tools_json)},
            {"top_p", e.top_p},
            {"truncation", "disabled"},
            {"usage", std::move(usage)},
            {"user", e.user.empty() ? json(nullptr) : json(e.user)},
            {"metadata", parsed_or_null(e.metadata_json)}};
  return r;
}

}  // namespace

std::string response_id_of_item(std::string_view item_id) {
  // rs_TOKEN, msg_TOKEN and fc_TOKEN_INDEX belong to resp_TOKEN.
  for (std::string_view prefix : {"msg_", "rs_"}) {
    if (item_id.starts_with(prefix)) return "resp_" + std::string(item_id.substr(prefix.size()));
  }
  if (item_id.starts_with("fc_")) {
    const std::string_view rest = item_id.substr(3);
    const auto cut = rest.rfind('_');
    if (cut == std::string_view::npos) return "";
    return "resp_" + std::string(rest.substr(0, cut));
  }
  return "";
}

std::optional<std::string> output_item_of(const std::string& response_json,
                                          const std::string& item_id) {
  const json r = json::parse(response_json, nullptr, false);
  if (!r.is_object() || !r.contains("output") || !r["output"].is_array()) return std::nullopt;
  for (const json& item : r["output"]) {
    if (item.is_object() && item.value("id", "") == item_id) return dump_json(item);
  }
  return std::nullopt;
}

ResponseEcho response_echo(const ResponsesRequest& req, std::string id, std::string model,
                           std::int64_t created_at) {
  return {.id = std::move(id),
          .model = std::move(model),
          .created_at = created_at,
          .instructions = req.instructions,
          .previous_response_id = req.previous_response_id,
          .store = req.store,
          .tools_json = req.tools_json,
          .tool_choice_json = req.tool_choice_json,
          .metadata_json = req.metadata_json,
          .max_output_tokens = req.max_output_tokens,
          .temperature = req.chat.gen.sampling.temperature,
          .top_p = req.chat.gen.sampling.top_p,
          .parallel_tool_calls = req.chat.parallel_tool_calls,
          .user = req.chat.gen.user,
          .format = req.chat.output_format,
          .namespaced = req.namespaced};
}

ResponsesRenderer::ResponsesRenderer(ResponseEcho echo, bool stream, ResponseStoring storing)
    : echo_(std::move(echo)), stream_(stream), storing_(std::move(storing)) {}

std::string ResponsesRenderer::event(const std::string& type, json data) {
  json out = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [k, v] : data.items()) out[k] = std::move(v);
  return fmt::format("event: {}\ndata: {}\n\n", type, dump_json(out));
}

bool ResponsesRenderer::start(ChunkWriter& out) {
  json r = response_object(echo_, "in_progress", json::array(), nullptr);
  // Two statements: the events are numbered in the order they are made.
  std::string body = event("response.created", {{"response", r}});
  body += event("response.in_progress", {{"response", r}});
  return out.write(body);
}

std::string ResponsesRenderer::open_item(Item kind) {
  if (open_ == kind) return "";
  std::string out = close_item();
  open_ = kind;
  ++output_index_;
  item_text_.clear();
  if (kind == Item::kMessage) message_seen_ = true;
  const bool reasoning = kind == Item::kReasoning;
  json item =
      reasoning ? reasoning_item(echo_, "", "in_progress") : message_item(echo_, "", "in_progress");
  json part = reasoning ? json{{"type", "reasoning_text"}, {"text", ""}} : output_text_part("");
  out += event("response.output_item.added", {{"output_index", output_index_}, {"item", item}});
  out += event("response.content_part.added", {{"item_id", item["id"]},
                                               {"output_index", output_index_},
                                               {"content_index", 0},
                                               {"part", part}});
  return out;
}

std::string ResponsesRenderer::close_item() {
  if (open_ == Item::kNone) return "";
  const bool reasoning = open_ == Item::kReasoning;
  open_ = Item::kNone;
  json item = reasoning ? reasoning_item(echo_, item_text_, "completed")
                        : message_item(echo_, item_text_, "completed");
  json part = reasoning ? json{{"type", "reasoning_text"}, {"text", item_text_}}
                        : output_text_part(item_text_);
  const json id = item["id"];
  std::string out = event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                          {{"item_id", id},
                           {"output_index", output_index_},
                           {"content_index", 0},
                           {"text", item_text_}});
  out += event(
      "response.content_part.done",
      {{"item_id", id}, {"output_index", output_index_}, {"content_index", 0}, {"part", part}});
  out += event("response.output_item.done", {{"output_index", output_index_}, {"item", item}});
  done_items_.push_back(std::move(item));
  return out;
}

bool ResponsesRenderer::delta(ChunkWriter& out, const TurnDelta& d) {
  std::string body;
  // A reasoning item comes first, also an empty one, as in the non-streaming body.
  if (d.reasoning_block && output_index_ < 0) body += open_item(Item::kReasoning);
  auto add = [&](Item kind, const std::string& text) {
    if (text.empty()) return;
    body += open_item(kind);
    item_text_ += text;
    json ev = {{"item_id", kind == Item::kReasoning ? reasoning_id(echo_) : message_id(echo_)},
               {"output_index", output_index_},
               {"content_index", 0},
               {"delta", text}};
    if (kind == Item::kMessage) ev["logprobs"] = json::array();
    body += event(
        kind == Item::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
        std::move(ev));
  };
  add(Item::kReasoning, d.reasoning);
  add(Item::kMessage, d.content);
  return body.empty() || out.write(body);
}

void ResponsesRenderer::keep(const TurnResult& r, const std::string& response_json) {
  if (storing_.store == nullptr) return;
  StoredResponse s{.id = echo_.id,
                   .tenant = storing_.tenant,
                   .session = storing_.session,
                   .messages = std::move(storing_.input_messages),
                   .parent = std::move(storing_.parent),
                   .response_json = response_json,
                   .input_json = std::move(storing_.input_json)};
  s.messages.push_back(r.reply);
  if (!storing_.store->put(std::move(s))) {
    log::warn("response {} not stored: its conversation exceeds --responses-store-bytes ({})",
              echo_.id, storing_.store->limits().capacity_bytes);
  }
}

bool ResponsesRenderer::finish(ChunkWriter& out, const TurnResult& r) {
  const bool incomplete = r.finish == engine::FinishReason::kLength;
  json output = json::array();
  for (auto& item : output_items(echo_, r)) output.push_back(std::move(item));
  json response =
      response_object(echo_, incomplete ? "incomplete" : "completed", output, responses_usage(r));
  if (incomplete) response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  // The body (and what GET returns) carries recur's fields; the stream's response.completed
  // event does not.
  json with_recur = response;
  add_recur_fields(with_recur, {.trace = &r.trace, .timing = r.timing});
  const std::string body = dump_json(with_recur);
  keep(r, body);
  if (!stream_) return out.write(body);

  std::string tail;
  if (r.reasoning && output_index_ < 0) tail += open_item(Item::kReasoning);
  // A possible function call held back that was text after all; a turn without calls has a
  // message item, maybe empty.
  if (!r.unstreamed_content.empty() || (r.tool_calls.empty() && !message_seen_)) {
    tail += open_item(Item::kMessage);
    if (!r.unstreamed_content.empty()) {
      item_text_ += r.unstreamed_content;
      tail += event("response.output_text.delta", {{"item_id", message_id(echo_)},
                                                   {"output_index", output_index_},
                                                   {"content_index", 0},
                                                   {"delta", r.unstreamed_content},
                                                   {"logprobs", json::array()}});
    }
  }
  tail += close_item();
  for (size_t i = 0; i < r.tool_calls.size(); ++i) {
    const auto& c = r.tool_calls[i];
    ++output_index_;
    const std::string id = call_item_id(echo_, i);
    json added = call_item(echo_, i, c, "in_progress");
    added["arguments"] = "";
    tail += event("response.output_item.added", {{"output_index", output_index_}, {"item", added}});
    tail += event("response.function_call_arguments.delta",
                  {{"item_id", id}, {"output_index", output_index_}, {"delta", c.arguments_json}});
    tail += event("response.function_call_arguments.done", {{"item_id", id},
                                                            {"output_index", output_index_},
                                                            {"name", added["name"]},
                                                            {"arguments", c.arguments_json}});
    tail += event("response.output_item.done",
                  {{"output_index", output_index_}, {"item", call_item(echo_, i, c, "completed")}});
  }
  tail += cache_trace_comment(r.trace);
  tail +=
      event(incomplete ? "response.incomplete" : "response.completed", {{"response", response}});
  return out.write(tail);
}

void ResponsesRenderer::fail(ChunkWriter& out, const ApiError& err) {
  json response = response_object(echo_, "failed", json::array(), nullptr);
  response["error"] = {{"code", err.code.empty() ? err.type : err.code}, {"message", err.message}};
  out.fail(err, event("response.failed", {{"response", response}}));
}

}  // namespace recur::server
