// Where one request's time went, from the moment its headers arrived to its last byte: the server's
// own phases (body parse, template render, tokenization) and the engine's (queue, cache restore,
// prefill, snapshots, decode). Clients see it as the `x_recur_timing` object of a response (beside
// `x_recur_cache`); /metrics has a histogram per phase (recur_request_phase_seconds).
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/request.h"

namespace recur::server {

class ServerMetrics;

struct RequestTiming {
  using Clock = std::chrono::steady_clock;
  Clock::time_point received;  // request headers read (the body is read after)
  Clock::time_point parsed;    // body parsed into a request
  double render_s = 0;         // chat template (both renderings: with and without the
                               // generation prompt)
  double tokenize_s = 0;
  Clock::time_point submitted;    // handed to the engine
  Clock::time_point first_token;  // first generated text or token handed to the writer
  engine::EngineTiming engine;

  void mark_first_token() {
    if (first_token == Clock::time_point{}) first_token = Clock::now();
  }
  // Milliseconds, rounded to 0.01: {"parse_ms":..,"render_ms":..,"tokenize_ms":..,"queue_ms":..,
  // "restore_ms":..,"prefill_ms":..,"forward_ms":..,"snapshot_ms":..,"ttft_ms":..,"decode_ms":..,
  // "total_ms":..,"prefill_tokens":..,"prefill_steps":..}. total_ms runs until now.
  nlohmann::ordered_json to_json_object() const;
  std::string to_json() const;  // its text
  // Every phase into the recur_request_phase_seconds histograms.
  void observe(ServerMetrics& metrics) const;
};

}  // namespace recur::server
