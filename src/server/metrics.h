// Prometheus metrics of the server: request counts and latencies, TTFT and inter-token
// histograms, token counters, queue depth, active sequences, and the prompt cache's counters and
// gauges. Rendered in the text exposition format for GET /metrics. Thread-safe: HTTP threads and
// the engine thread update it concurrently (prometheus-cpp metrics are atomic).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace recur::server {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // One finished HTTP request: route template (not the raw path, to bound label cardinality).
  void observe_request(std::string_view route, int http_status, double seconds);
  void observe_ttft(double seconds);
  void observe_inter_token(double seconds);
  // One phase of a request (RequestTiming): recur_request_phase_seconds{phase="..."}.
  void observe_phase(std::string_view phase, double seconds);
  void add_tokens(std::int64_t prompt, std::int64_t cached, std::int64_t generated);
  void set_queue_depth(std::int64_t n);
  void set_active_sequences(std::int64_t n);
  void add_cancelled(std::string_view reason);  // client_disconnect, shutdown

  // Mirrors a monotonic counter owned elsewhere (the cache's stats): adds the increase since the
  // last call under these labels. Labels are "name=value" pairs joined by ','.
  void sync_counter(std::string_view name, std::string_view help, std::string_view labels,
                    std::uint64_t total);
  void set_gauge(std::string_view name, std::string_view help, std::string_view labels,
                 double value);

  // Called at the start of every render(), to set gauges owned by other parts (the HTTP pool).
  void add_collector(std::function<void(ServerMetrics&)> collect);

  std::string render();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace recur::server
