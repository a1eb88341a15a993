// Anthropic Messages request bodies (POST /v1/messages and /v1/messages/count_tokens) parsed into
// the ChatRequest every chat-shaped API shares: the system prompt becomes the first message,
// content blocks become messages (tool_result blocks tool messages, thinking blocks
// reasoning_content, tool_use blocks tool calls), tools and tool_choice take the chat-template
// shape, `thinking` becomes the template's enable_thinking. A 400 names the field at fault.
#pragma once

#include <string_view>

#include "server/openai_request.h"

namespace recur::server {

Parsed<ChatRequest> parse_messages_request(std::string_view body, const RequestLimits& limits);

// The anthropic-version header, when sent, must look like a version date (2023-06-01).
std::optional<ApiError> check_anthropic_version(std::string_view header_value);

}  // namespace recur::server
