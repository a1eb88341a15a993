// Progress of one slow piece of work (a download, a model load, a long prefill): a bar redrawn in
// place when stderr is a terminal, otherwise a log line every few seconds, and one closing line.
// Not for work that ends in well under a second: such work says nothing until it is done.
// Thread-safe: workers may report from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "util/clock.h"

namespace recur {

enum class ProgressUnit : std::uint8_t { kBytes, kTokens, kItems };

struct ProgressOptions {
  // Draw a bar (stderr is a terminal) or write periodic log lines.
  bool tty = false;
  Nanos log_interval_ns = 5'000'000'000;   // between log lines when not a terminal
  Nanos redraw_interval_ns = 100'000'000;  // between bar redraws on a terminal
  Nanos quiet_ns = 1'000'000'000;          // nothing is shown before this much time has passed
  const Clock* clock = nullptr;            // null: the steady clock
  // Where bars (with their "\r") and lines go; null: the terminal (bars) or the logger (lines).
  std::function<void(std::string_view)> out;
};

// Whether stderr is a terminal (and TERM is not "dumb"): bars there, log lines elsewhere.
bool stderr_is_terminal();

class Progress {
 public:
  // total <= 0: unknown (the bar shows what is done and the rate only).
  Progress(std::string label, std::int64_t total, ProgressUnit unit, ProgressOptions options);
  Progress(std::string label, std::int64_t total, ProgressUnit unit);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set(std::int64_t done);
  void add(std::int64_t n);
  void set_total(std::int64_t total);
  // The closing line (once): what was done, in how long. `outcome` replaces "done" (e.g. a
  // failure).
  void finish(std::string_view outcome = "done");

  // "1.50 GiB", "1,234 tokens": a quantity in this unit.
  static std::string quantity(std::int64_t n, ProgressUnit unit);

 private:
  void report(bool force);
  std::string status_text(Nanos now) const;

  std::string label_;
  ProgressUnit unit_;
  ProgressOptions options_;
  SteadyClock steady_;
  const Clock* clock_;
  std::mutex mu_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  Nanos start_ns_;
  Nanos last_report_ns_ = 0;
  bool shown_ = false;  // something was drawn or logged
  bool finished_ = false;
};

}  // namespace recur
