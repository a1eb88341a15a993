#include "util/check.h"

#include <cstdio>
#include <cstdlib>

namespace recur::detail {

void check_failed(const char* condition, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "recur: CHECK failed at %s:%d: %s%s%s\n", file, line, condition,
               msg ? " - " : "", msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace recur::detail
