#include "util/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/format.h"
#include "util/log.h"

namespace recur {

namespace {

constexpr int kBarWidth = 24;

std::string format_duration(double secs) {
  if (secs < 60) return fmt::format("{:.1f} s", secs);
  const auto s = static_cast<std::int64_t>(secs);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

void write_stderr(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

std::string Progress::quantity(std::int64_t n, ProgressUnit unit) {
  switch (unit) {
    case ProgressUnit::kBytes:
      return format_bytes(n);
    case ProgressUnit::kTokens:
      return fmt::format("{} tokens", n);
    case ProgressUnit::kItems:
      break;
  }
  return fmt::format("{}", n);
}

Progress::Progress(std::string label, std::int64_t total, ProgressUnit unit)
    : Progress(std::move(label), total, unit, ProgressOptions{.tty = stderr_is_terminal()}) {}

Progress::Progress(std::string label, std::int64_t total, ProgressUnit unit,
                   ProgressOptions options)
    : label_(std::move(label)),
      unit_(unit),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &steady_),
      total_(total),
      start_ns_(clock_->now_ns()) {}

Progress::~Progress() { finish(); }

void Progress::set(std::int64_t done) {
  {
    std::lock_guard lock(mu_);
    done_ = done;
  }
  report(false);
}

void Progress::add(std::int64_t n) {
  {
    std::lock_guard lock(mu_);
    done_ += n;
  }
  report(false);
}

void Progress::set_total(std::int64_t total) {
  std::lock_guard lock(mu_);
  total_ = total;
}

std::string Progress::status_text(Nanos now) const {
  const double secs = static_cast<double>(now - start_ns_) / 1e9;
  const double rate = secs > 0 ? static_cast<double>(done_) / secs : 0;
  std::string text;
  if (total_ > 0) {
    const double frac =
        std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
    text = fmt::format("{:3.0f}% {} of {}", frac * 100, quantity(done_, unit_),
                       quantity(total_, unit_));
  } else {
    text = quantity(done_, unit_);
  }
  if (rate > 0) {
    text += fmt::format(", {}/s", quantity(static_cast<std::int64_t>(rate), unit_));
    if (total_ > done_) {
      text += ", " + format_duration(static_cast<double>(total_ - done_) / rate) + " left";
    }
  }
  return text;
}

void Progress::report(bool force) {
  std::lock_guard lock(mu_);
  if (finished_) return;
  if (!options_.out && !log::enabled(log::Level::kInfo)) return;  // --log-level warn: quiet
  const Nanos now = clock_->now_ns();
  if (!force && now - start_ns_ < options_.quiet_ns) return;
  const Nanos interval = options_.tty ? options_.redraw_interval_ns : options_.log_interval_ns;
  if (!force && shown_ && now - last_report_ns_ < interval) return;
  last_report_ns_ = now;
  shown_ = true;
  if (options_.tty) {
    std::string bar;
    if (total_ > 0) {
      const double frac =
          std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
      const int filled = static_cast<int>(frac * kBarWidth);
      bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(kBarWidth - filled), '.') + "] ";
    }
    // \033[K clears what a longer previous line left to the right.
    const std::string line = "\r" + label_ + " " + bar + status_text(now) + "\033[K";
    if (options_.out)
      options_.out(line);
    else
      write_stderr(line);
  } else {
    const std::string line = label_ + ": " + status_text(now);
    if (options_.out)
      options_.out(line);
    else
      log::info("{}", line);
  }
}

void Progress::finish(std::string_view outcome) {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  // Work that ended before anything was shown says nothing: its caller logs what it did.
  if (!shown_) return;
  const Nanos now = clock_->now_ns();
  const std::string line = fmt::format("{}: {}, {} in {}", label_, outcome, quantity(done_, unit_),
                                       format_duration(static_cast<double>(now - start_ns_) / 1e9));
  if (options_.tty) {
    const std::string text = "\r" + line + "\033[K\n";
    if (options_.out)
      options_.out(text);
    else
      write_stderr(text);
  } else if (options_.out) {
    options_.out(line);
  } else {
    log::info("{}", line);
  }
}

}  // namespace recur
