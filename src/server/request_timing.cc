#include "server/request_timing.h"

#include <fmt/format.h>

#include <cmath>

#include "server/metrics.h"

namespace recur::server {

namespace {

double seconds(RequestTiming::Clock::time_point a, RequestTiming::Clock::time_point b) {
  if (a == RequestTiming::Clock::time_point{} || b == RequestTiming::Clock::time_point{} || b < a) {
    return 0;
  }
  return std::chrono::duration<double>(b - a).count();
}

double ms(double s) { return std::round(s * 1e5) / 100; }

}  // namespace

std::string RequestTiming::to_json() const {
  const auto now = Clock::now();
  return fmt::format(
      "{{\"parse_ms\":{},\"render_ms\":{},\"tokenize_ms\":{},\"queue_ms\":{},\"restore_ms\":{},"
      "\"prefill_ms\":{},\"forward_ms\":{},\"snapshot_ms\":{},\"ttft_ms\":{},\"decode_ms\":{},"
      "\"total_ms\":{},\"prefill_tokens\":{},\"prefill_steps\":{}}}",
      ms(seconds(received, parsed)), ms(render_s), ms(tokenize_s), ms(engine.queue_s),
      ms(engine.restore_s), ms(engine.prefill_s), ms(engine.forward_s), ms(engine.snapshot_s),
      ms(seconds(received, first_token)), ms(engine.decode_s), ms(seconds(received, now)),
      engine.prefill_tokens, engine.prefill_steps);
}

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

void add_timing(std::string& json_object, const RequestTiming& timing) {
  if (json_object.empty() || json_object.back() != '}') return;
  json_object.pop_back();
  json_object += ",\"x_recur_timing\":" + timing.to_json() + "}";
}

void add_timing_to_sse(std::string& sse_event, const RequestTiming& timing) {
  constexpr std::string_view kTail = "}\n\n";
  if (!sse_event.ends_with(kTail)) return;
  sse_event.insert(sse_event.size() - kTail.size(), ",\"x_recur_timing\":" + timing.to_json());
}

}  // namespace recur::server
