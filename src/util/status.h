// Status and Result<T>: recoverable failures (bad file, bad request, exhausted budget) carry a
// code, a message and the place they were raised. Bugs use RECUR_CHECK (check.h) instead; recur's
// own code never throws.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <variant>

namespace recur {

enum class StatusCode : std::uint8_t {
  kOk,
  kInvalidArgument,  // the caller's input is malformed or out of range
  kNotFound,         // a file, tensor, route or entry does not exist
  kOutOfRange,       // a limit was exceeded (context, budget, size)
  kFailedPrecondition,
  kResourceExhausted,  // queue full, memory budget exhausted
  kUnimplemented,
  kIo,        // the operating system refused (open, read, mmap)
  kDataLoss,  // a file is truncated or corrupt
  kInternal,
  kCancelled,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message,
         std::source_location where = std::source_location::current());

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "file.cc:123" of the place the status was raised; empty for ok.
  const std::string& location() const { return location_; }
  // "code: message" - what a user sees.
  std::string to_string() const;
  // Prefixes context, e.g. with_context("loading config.json") -> "loading config.json: <msg>".
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string location_;
};

// Formatting constructors: error(StatusCode, "fmt {}", args...) with the caller's location.
template <typename... Args>
struct Error {
  Status status;
  Error(StatusCode code, fmt::format_string<Args...> f, Args&&... args,
        std::source_location where = std::source_location::current())
      : status(code, fmt::format(f, std::forward<Args>(args)...), where) {}
  operator Status() && { return std::move(status); }  // NOLINT(google-explicit-constructor)
};
template <typename... Args>
Error(StatusCode, fmt::format_string<Args...>, Args&&...) -> Error<Args...>;

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.is_ok()) status_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }
  template <typename... Args>
  Result(Error<Args...>&& e) : Result(Status(std::move(e))) {}  // NOLINT

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace recur

// Propagates a failed Status (or the Status of a failed Result) to the caller.
#define RECUR_RETURN_IF_ERROR(expr)                                               \
  do {                                                                            \
    auto recur_status_ = (expr);                                                  \
    if (!recur_status_.is_ok()) return ::recur::detail::status_of(recur_status_); \
  } while (0)

#define RECUR_CONCAT_INNER_(a, b) a##b
#define RECUR_CONCAT_(a, b) RECUR_CONCAT_INNER_(a, b)
// RECUR_ASSIGN_OR_RETURN(auto x, make_x()): binds the value or returns the error.
#define RECUR_ASSIGN_OR_RETURN(lhs, expr) \
  RECUR_ASSIGN_OR_RETURN_IMPL_(RECUR_CONCAT_(recur_result_, __LINE__), lhs, expr)
#define RECUR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

namespace recur::detail {
inline Status status_of(const Status& s) { return s; }
template <typename T>
Status status_of(const Result<T>& r) {
  return r.status();
}
}  // namespace recur::detail
