#include "util/format.h"

#include <fmt/format.h>

namespace recur {

std::string format_bytes(std::int64_t n_bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n_bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", n_bytes) : fmt::format("{:.2f} {}", v, kUnits[unit]);
}

}  // namespace recur
