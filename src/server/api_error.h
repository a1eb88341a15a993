// Errors in OpenAI's shape: {"error":{"message","type","param","code"}} with the HTTP status that
// goes with them. The one place where recur's failures become HTTP responses.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::server {

struct ApiError {
  int http_status = 500;
  std::string type;       // invalid_request_error, authentication_error, not_found_error, ...
  std::string code;       // machine-readable detail, e.g. "context_length_exceeded"; may be empty
  std::string param;      // the request field at fault; may be empty
  std::string message;    // one sentence for a person
  int retry_after_s = 0;  // > 0: send a Retry-After header (429/503)

  std::string to_json() const;
};

ApiError invalid_request(std::string param, std::string message, std::string code = "");
ApiError unauthorized(std::string message);
ApiError not_found(std::string message, std::string code = "");
ApiError payload_too_large(std::size_t limit_bytes);
ApiError overloaded(std::string message, int retry_after_s);
ApiError internal_error(std::string message);
// Maps a recoverable Status from a lower module (e.g. a prompt beyond the context) to the API.
ApiError from_status(const Status& status, std::string param = "");

}  // namespace recur::server
