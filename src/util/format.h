// Formatting of quantities for people: log lines, warnings, command summaries. Not for anything
// that is parsed back (config/ parses sizes; this only prints them).
#pragma once

#include <cstdint>
#include <string>

namespace recur {

// Binary units with two decimals above 1 KiB: "512 B", "1.50 MiB", "2.00 GiB" (TiB at most).
std::string format_bytes(std::int64_t n_bytes);

}  // namespace recur
