// OpenAI Responses request bodies (POST /v1/responses) parsed into the ChatRequest every
// chat-shaped API shares: `input` (a string or items: messages, function_call,
// function_call_output, reasoning) becomes chat messages, the reasoning, message and function
// calls of one assistant turn merging into one assistant message as the pipeline's anticipated
// reply has them; function tools take the chat-template shape; reasoning.effort becomes the
// template's enable_thinking. `instructions` and `previous_response_id` are resolved by the route
// (service_responses.cc). A 400 names the field at fault.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace recur::server {

// A function of a `namespace` tool (how Codex CLI groups an MCP server's tools): the model is
// offered it under one flat name, and its calls go back to the client as {namespace, name}.
struct NamespacedFunction {
  std::string flat;
  std::string ns;
  std::string name;
};
// "mcp__github__" + "create_issue" -> "mcp__github__create_issue" (the flat name such tools had
// before namespaces); a namespace not ending in '_' is joined with "__".
std::string flat_tool_name(std::string_view ns, std::string_view name);

struct ResponsesRequest {
  ChatRequest chat;  // messages: this request's input items only
  std::optional<std::string> instructions;
  std::string previous_response_id;
  bool store = true;
  // Echoed in the response object, as the client sent them.
  std::string tools_json = "[]";  // the Responses-shaped tools
  std::string tool_choice_json = "\"auto\"";
  std::string metadata_json = "{}";
  std::optional<std::int64_t> max_output_tokens;
  std::vector<NamespacedFunction> namespaced;
  // `input` as the client sent it (JSON; only with store): GET /v1/responses/{id}/input_items.
  std::string input_json;
};

// An `item_reference` input item's id -> the referenced item as JSON text (an output item of a
// stored response), or nullopt for an unknown id (a 404 naming it).
using ItemResolver = std::function<std::optional<std::string>(const std::string& item_id)>;

// Without a resolver, item_reference items are refused.
Parsed<ResponsesRequest> parse_responses_request(std::string_view body, const RequestLimits& limits,
                                                 const ItemResolver& resolve_item = nullptr);

}  // namespace recur::server
