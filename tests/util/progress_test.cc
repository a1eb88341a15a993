// Progress: quiet for short work, throttled lines or bar redraws, one closing line.
#include "util/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace recur {
namespace {

constexpr Nanos kSec = 1'000'000'000;

struct Capture {
  ManualClock clock;
  std::vector<std::string> lines;
  ProgressOptions options(bool tty) {
    return {
        .tty = tty, .clock = &clock, .out = [this](std::string_view s) { lines.emplace_back(s); }};
  }
};

TEST(Progress, ShortWorkSaysNothing) {
  Capture c;
  {
    Progress p("loading", 100, ProgressUnit::kItems, c.options(false));
    p.set(50);
    c.clock.advance_ns(kSec / 2);
    p.set(100);
  }
  EXPECT_TRUE(c.lines.empty());
}

TEST(Progress, LogLinesAreThrottledAndEndWithASummary) {
  Capture c;
  Progress p("downloading model.safetensors", 1000, ProgressUnit::kBytes, c.options(false));
  c.clock.advance_ns(2 * kSec);
  p.set(100);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0].rfind("downloading model.safetensors:  10% 100 B of 1000 B, 50 B/s", 0), 0u)
      << c.lines[0];
  for (int i = 0; i < 10; ++i) {
    c.clock.advance_ns(kSec / 10);
    p.add(10);
  }
  EXPECT_EQ(c.lines.size(), 1u);  // within the 5 s interval
  c.clock.advance_ns(5 * kSec);
  p.add(100);
  EXPECT_EQ(c.lines.size(), 2u);
  p.finish();
  p.finish();  // once
  ASSERT_EQ(c.lines.size(), 3u);
  EXPECT_EQ(c.lines[2], "downloading model.safetensors: done, 300 B in 8.0 s");
}

TEST(Progress, TerminalBarRedrawsInPlace) {
  Capture c;
  Progress p("prefill", 200, ProgressUnit::kTokens, c.options(true));
  c.clock.advance_ns(2 * kSec);
  p.set(100);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0].substr(0, 1), "\r");
  EXPECT_NE(c.lines[0].find("[############............]  50% 100 tokens of 200 tokens"),
            std::string::npos)
      << c.lines[0];
  EXPECT_NE(c.lines[0].find("2.0 s left"), std::string::npos) << c.lines[0];
  p.finish("cancelled");
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(c.lines[1], "\rprefill: cancelled, 100 tokens in 2.0 s\033[K\n");
}

TEST(Progress, UnknownTotalShowsAmountAndRate) {
  Capture c;
  Progress p("download", 0, ProgressUnit::kBytes, c.options(false));
  c.clock.advance_ns(2 * kSec);
  p.set(4096);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0], "download: 4.00 KiB, 2.00 KiB/s");
}

}  // namespace
}  // namespace recur
