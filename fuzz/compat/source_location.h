// Force-included in the fuzz build only: clang 14 lacks __builtin_source_location, so libstdc++
// 12's <source_location> declares nothing under it and util/status.h would not compile. This stands
// in with the builtins clang 14 has; gcc builds and newer clangs never see it.
#pragma once

#include <version>

#if !defined(__cpp_lib_source_location) && !__has_builtin(__builtin_source_location)
#include <cstdint>

namespace std {  // NOLINT: a stand-in for the missing standard type, fuzz build only
struct source_location {
  static constexpr source_location current(
      const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
      std::uint_least32_t line = __builtin_LINE(),
      std::uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location loc;
    loc.file_ = file;
    loc.function_ = function;
    loc.line_ = line;
    loc.column_ = column;
    return loc;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
  std::uint_least32_t column_ = 0;
};
}  // namespace std
#endif
