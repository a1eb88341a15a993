// RECUR_CHECK: a broken invariant is a bug; abort with file:line and the failed condition.
// Recoverable failures return a Status (status.h) instead.
#pragma once

namespace recur::detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line, const char* msg);
}

#define RECUR_CHECK(cond)                                                \
  do {                                                                   \
    if (!(cond)) [[unlikely]]                                            \
      ::recur::detail::check_failed(#cond, __FILE__, __LINE__, nullptr); \
  } while (0)

#define RECUR_CHECK_MSG(cond, msg)                                     \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      ::recur::detail::check_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
