#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace recur::server {

std::string ApiError::to_json() const {
  nlohmann::ordered_json err = {{"message", message}, {"type", type}};
  err["param"] = param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param);
  err["code"] = code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(code);
  return nlohmann::ordered_json{{"error", err}}.dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace);
}

ErrorShape error_shape_for_path(std::string_view path) {
  // The routes answer without the /v1 prefix too (clients configured with a bare base URL).
  if (path.starts_with("/v1/")) path.remove_prefix(3);
  return path == "/messages" || path.starts_with("/messages/") ? ErrorShape::kAnthropic
                                                               : ErrorShape::kOpenAI;
}

std::string ApiError::to_anthropic_json() const {
  // Anthropic's type names for the statuses recur answers with.
  std::string t = type;
  if (http_status == 413) {
    t = "request_too_large";
  } else if (http_status == 503 || http_status == 529) {
    t = "overloaded_error";
  } else if (http_status == 429) {
    t = "rate_limit_error";
  } else if (http_status >= 500) {
    t = "api_error";
  }
  // Anthropic's error has no param field: the message names the field itself.
  std::string text =
      param.empty() || message.find(param) != std::string::npos ? message : param + ": " + message;
  nlohmann::ordered_json err = {{"type", t}, {"message", text}};
  return nlohmann::ordered_json{{"type", "error"}, {"error", err}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_request(std::string param, std::string message, std::string code) {
  return {.http_status = 400,
          .type = "invalid_request_error",
          .code = std::move(code),
          .param = std::move(param),
          .message = std::move(message)};
}

ApiError unauthorized(std::string message) {
  return {.http_status = 401,
          .type = "authentication_error",
          .code = "invalid_api_key",
          .message = std::move(message)};
}

ApiError not_found(std::string message, std::string code) {
  return {.http_status = 404,
          .type = "not_found_error",
          .code = std::move(code),
          .message = std::move(message)};
}

ApiError payload_too_large(std::size_t limit_bytes) {
  return {.http_status = 413,
          .type = "invalid_request_error",
          .code = "request_too_large",
          .message = fmt::format("request body exceeds the limit of {} bytes "
                                 "(--body-limit-bytes / RECUR_BODY_LIMIT_BYTES)",
                                 limit_bytes)};
}

ApiError overloaded(std::string message, int retry_after_s) {
  return {.http_status = 503,
          .type = "server_overloaded",
          .code = "queue_full",
          .message = std::move(message),
          .retry_after_s = retry_after_s};
}

ApiError internal_error(std::string message) {
  return {.http_status = 500, .type = "server_error", .message = std::move(message)};
}

ApiError from_status(const Status& status, std::string param) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return invalid_request(std::move(param), status.message());
    case StatusCode::kOutOfRange:
      return invalid_request(std::move(param), status.message(), "limit_exceeded");
    case StatusCode::kNotFound:
      return not_found(status.message());
    case StatusCode::kResourceExhausted:
      return overloaded(status.message(), 1);
    case StatusCode::kCancelled:
      return {.http_status = 499, .type = "cancelled", .message = status.message()};
    default:
      return internal_error(status.to_string());
  }
}

}  // namespace recur::server
