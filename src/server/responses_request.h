// OpenAI Responses request bodies (POST /v1/responses) parsed into the ChatRequest every
// chat-shaped API shares: `input` (a string or items: messages, function_call,
// function_call_output, reasoning) becomes chat messages, the reasoning, message and function
// calls of one assistant turn merging into one assistant message as the pipeline's anticipated
// reply has them; function tools take the chat-template shape; reasoning.effort becomes the
// template's enable_thinking. `instructions` and `previous_response_id` are resolved by the route
// (service_responses.cc). A 400 names the field at fault.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/openai_request.h"

namespace recur::server {

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
};

Parsed<ResponsesRequest> parse_responses_request(std::string_view body,
                                                 const RequestLimits& limits);

}  // namespace recur::server
