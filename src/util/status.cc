#include "util/status.h"

#include <string_view>

namespace recur {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kResourceExhausted:
      return "resource exhausted";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kIo:
      return "i/o error";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

namespace {
std::string short_location(const std::source_location& where) {
  std::string_view file = where.file_name();
  // Keep the path from src/ on: stable across build folders, short in logs.
  if (auto pos = file.rfind("src/"); pos != std::string_view::npos) file.remove_prefix(pos + 4);
  return fmt::format("{}:{}", file, where.line());
}
}  // namespace

Status::Status(StatusCode code, std::string message, std::source_location where)
    : code_(code), message_(std::move(message)) {
  if (code_ != StatusCode::kOk) location_ = short_location(where);
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", status_code_name(code_), message_);
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  Status out = *this;
  out.message_ = fmt::format("{}: {}", context, message_);
  return out;
}

}  // namespace recur
