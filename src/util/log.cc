#include "util/log.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>

namespace recur::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};  // process-wide by nature: stderr is one stream
}

std::optional<Level> parse_level(std::string_view w) {
  if (w == "trace") return Level::kTrace;
  if (w == "debug") return Level::kDebug;
  if (w == "info") return Level::kInfo;
  if (w == "warn") return Level::kWarn;
  if (w == "error") return Level::kError;
  if (w == "off") return Level::kOff;
  return std::nullopt;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kTrace:
      return "trace";
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

void set_level(Level l) { g_level.store(l, std::memory_order_relaxed); }
Level level() { return g_level.load(std::memory_order_relaxed); }

void write_line(Level l, std::string_view msg) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t secs = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string line = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {:5} {}\n",
                                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                 tm.tm_min, tm.tm_sec, ms, level_name(l), msg);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;  // stderr closed: logging must never take the process down
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace recur::log
