// A small leveled logger: one line per event on stderr, "key=value" fields, no allocation when the
// level is filtered out. Not for the per-token hot path (update metrics there instead).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

namespace recur::log {

enum class Level : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// Parses trace|debug|info|warn|error|off.
std::optional<Level> parse_level(std::string_view word);
const char* level_name(Level level);

void set_level(Level level);
Level level();
inline bool enabled(Level l) { return l >= level(); }

// Writes one complete line atomically (a single write(2)), so concurrent threads never interleave.
void write_line(Level l, std::string_view line);

template <typename... Args>
void emit(Level l, fmt::format_string<Args...> f, Args&&... args) {
  if (!enabled(l)) return;
  write_line(l, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void trace(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::kTrace, f, std::forward<Args>(a)...);
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::kDebug, f, std::forward<Args>(a)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::kInfo, f, std::forward<Args>(a)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::kWarn, f, std::forward<Args>(a)...);
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::kError, f, std::forward<Args>(a)...);
}

}  // namespace recur::log
