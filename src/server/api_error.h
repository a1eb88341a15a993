// Errors in OpenAI's shape, {"error":{"message","type","param","code"}}, or for Anthropic's routes
// in Anthropic's, {"type":"error","error":{"type","message"}}, with the HTTP status that goes with
// them. The one place where recur's failures become HTTP responses.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "util/status.h"

namespace recur::server {

enum class ErrorShape { kOpenAI, kAnthropic };
// The shape the clients of a route read: Anthropic's under /v1/messages (or /messages), OpenAI's
// elsewhere.
ErrorShape error_shape_for_path(std::string_view path);

struct ApiError {
  int http_status = 500;
  std::string type;       // invalid_request_error, authentication_error, not_found_error, ...
  std::string code;       // machine-readable detail, e.g. "context_length_exceeded"; may be empty
  std::string param;      // the request field at fault; may be empty
  std::string message;    // one sentence for a person
  int retry_after_s = 0;  // > 0: send a Retry-After header (429/503)

  std::string to_json() const;
  // Anthropic's error types (overloaded_error, api_error, ...); the param leads the message.
  std::string to_anthropic_json() const;
  std::string to_json(ErrorShape shape) const {
    return shape == ErrorShape::kAnthropic ? to_anthropic_json() : to_json();
  }
};

ApiError invalid_request(std::string param, std::string message, std::string code = "");
ApiError unauthorized(std::string message);
ApiError not_found(std::string message, std::string code = "");
ApiError payload_too_large(std::size_t limit_bytes);
ApiError overloaded(std::string message, int retry_after_s);
ApiError internal_error(std::string message);
// A parse result: the value or the 400 to send.
template <typename T>
using Parsed = std::variant<T, ApiError>;
// The error of a failed parse; null when it holds a value.
template <typename T>
const ApiError* as_error(const Parsed<T>& p) {
  return std::get_if<ApiError>(&p);
}

// Maps a recoverable Status from a lower module (e.g. a prompt beyond the context) to the API.
ApiError from_status(const Status& status, std::string param = "");

}  // namespace recur::server
