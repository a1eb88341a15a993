#include "server/request_timing.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "server/metrics.h"

namespace recur::server {

namespace {

double seconds(RequestTiming::Clock::time_point a, RequestTiming::Clock::time_point b) {
  if (a == RequestTiming::Clock::time_point{} || b == RequestTiming::Clock::time_point{} || b < a) {
    return 0;
  }
  return std::chrono::duration<double>(b - a).count();
}

// Milliseconds, rounded to 0.01. A whole number is an integer, "12" rather than the "12.0" a
// double would print as: the form the field has always had.
nlohmann::ordered_json ms(double s) {
  const double v = std::round(s * 1e5) / 100;
  if (v == std::floor(v) && std::abs(v) < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

}  // namespace

nlohmann::ordered_json RequestTiming::to_json_object() const {
  const auto now = Clock::now();
  return {{"parse_ms", ms(seconds(received, parsed))},
          {"render_ms", ms(render_s)},
          {"tokenize_ms", ms(tokenize_s)},
          {"queue_ms", ms(engine.queue_s)},
          {"restore_ms", ms(engine.restore_s)},
          {"prefill_ms", ms(engine.prefill_s)},
          {"forward_ms", ms(engine.forward_s)},
          {"snapshot_ms", ms(engine.snapshot_s)},
          {"ttft_ms", ms(seconds(received, first_token))},
          {"decode_ms", ms(engine.decode_s)},
          {"total_ms", ms(seconds(received, now))},
          {"prefill_tokens", engine.prefill_tokens},
          {"prefill_steps", engine.prefill_steps}};
}

std::string RequestTiming::to_json() const { return to_json_object().dump(); }

void RequestTiming::observe(ServerMetrics& m) const {
  m.observe_phase("parse", seconds(received, parsed));
  m.observe_phase("render", render_s);
  m.observe_phase("tokenize", tokenize_s);
  m.observe_phase("queue", engine.queue_s);
  m.observe_phase("restore", engine.restore_s);
  m.observe_phase("prefill", engine.prefill_s);
  m.observe_phase("forward", engine.forward_s);
  m.observe_phase("snapshot", engine.snapshot_s);
  // From the request's arrival: what the client waits for beyond the network.
  if (first_token != Clock::time_point{}) m.observe_phase("ttft", seconds(received, first_token));
  m.observe_phase("decode", engine.decode_s);
}

}  // namespace recur::server
