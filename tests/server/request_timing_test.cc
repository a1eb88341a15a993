// The x_recur_timing object: valid JSON with every phase (recur_fields_test.cc: inside a body and
// an SSE event), and the phase histograms of /metrics.
#include "server/request_timing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "server/metrics.h"

namespace recur::server {
namespace {

RequestTiming sample_timing() {
  RequestTiming t;
  t.received = RequestTiming::Clock::now() - std::chrono::milliseconds(100);
  t.parsed = t.received + std::chrono::microseconds(250);
  t.render_s = 0.0012;
  t.tokenize_s = 0.0004;
  t.submitted = t.parsed + std::chrono::microseconds(1700);
  t.first_token = t.received + std::chrono::milliseconds(42);
  t.engine = {.queue_s = 0.001,
              .restore_s = 0.003,
              .prefill_s = 0.035,
              .forward_s = 0.033,
              .snapshot_s = 0.002,
              .decode_s = 0.2,
              .prefill_steps = 1,
              .prefill_tokens = 31};
  return t;
}

TEST(RequestTiming, JsonHasEveryPhaseInMilliseconds) {
  auto j = nlohmann::json::parse(sample_timing().to_json());
  for (const char* k : {"parse_ms", "render_ms", "tokenize_ms", "queue_ms", "restore_ms",
                        "prefill_ms", "forward_ms", "snapshot_ms", "ttft_ms", "decode_ms",
                        "total_ms", "prefill_tokens", "prefill_steps"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(j["parse_ms"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["render_ms"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 42.0);
  EXPECT_DOUBLE_EQ(j["forward_ms"].get<double>(), 33.0);
  EXPECT_EQ(j["prefill_tokens"].get<int>(), 31);
  EXPECT_GE(j["total_ms"].get<double>(), 100.0);
}

TEST(RequestTiming, PhasesReachTheMetrics) {
  ServerMetrics m;
  sample_timing().observe(m);
  const std::string text = m.render();
  for (const char* phase : {"parse", "render", "tokenize", "queue", "restore", "prefill", "forward",
                            "snapshot", "ttft", "decode"}) {
    EXPECT_NE(
        text.find(std::string("recur_request_phase_seconds_count{phase=\"") + phase + "\"} 1"),
        std::string::npos)
        << phase;
  }
}

}  // namespace
}  // namespace recur::server
