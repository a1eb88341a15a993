#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <vector>

namespace recur::server {
namespace {

prometheus::Labels parse_labels(std::string_view text) {
  prometheus::Labels labels;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view pair = text.substr(0, comma);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos) {
      labels.emplace(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return labels;
}

// Latency buckets from 1 ms to 2 min: TTFT on CPU spans that whole range.
prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

// Request phases run from a tenth of a millisecond (a render, a RAM restore) to minutes.
prometheus::Histogram::BucketBoundaries phase_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    120};
}

}  // namespace

struct ServerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("recur_http_requests_total")
          .Help("HTTP requests by route and status code.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& request_seconds =
      prometheus::BuildHistogram()
          .Name("recur_http_request_duration_seconds")
          .Help("Time from request start to the last response byte, by route.")
          .Register(*registry);
  prometheus::Histogram& ttft = prometheus::BuildHistogram()
                                    .Name("recur_time_to_first_token_seconds")
                                    .Help("Time from admission to the first generated token.")
                                    .Register(*registry)
                                    .Add({}, latency_buckets());
  prometheus::Family<prometheus::Histogram>& phase_seconds =
      prometheus::BuildHistogram()
          .Name("recur_request_phase_seconds")
          .Help(
              "Where requests' time goes, by phase: parse, render, tokenize (HTTP thread); "
              "queue, restore, prefill (of which forward), snapshot, decode (engine); ttft "
              "(arrival to the first token handed to the writer).")
          .Register(*registry);
  prometheus::Histogram& inter_token =
      prometheus::BuildHistogram()
          .Name("recur_inter_token_seconds")
          .Help("Time between consecutive generated tokens of a sequence.")
          .Register(*registry)
          .Add({}, latency_buckets());
  prometheus::Counter& prompt_tokens = prometheus::BuildCounter()
                                           .Name("recur_prompt_tokens_total")
                                           .Help("Prompt tokens of admitted requests.")
                                           .Register(*registry)
                                           .Add({});
  prometheus::Counter& cached_tokens =
      prometheus::BuildCounter()
          .Name("recur_cached_prompt_tokens_total")
          .Help("Prompt tokens restored from the prompt cache instead of computed.")
          .Register(*registry)
          .Add({});
  prometheus::Counter& generated_tokens = prometheus::BuildCounter()
                                              .Name("recur_generated_tokens_total")
                                              .Help("Tokens generated.")
                                              .Register(*registry)
                                              .Add({});
  prometheus::Gauge& queue_depth = prometheus::BuildGauge()
                                       .Name("recur_queue_depth")
                                       .Help("Requests waiting for a sequence slot.")
                                       .Register(*registry)
                                       .Add({});
  prometheus::Gauge& active = prometheus::BuildGauge()
                                  .Name("recur_active_sequences")
                                  .Help("Sequences the engine is stepping.")
                                  .Register(*registry)
                                  .Add({});
  prometheus::Family<prometheus::Counter>& cancelled =
      prometheus::BuildCounter()
          .Name("recur_cancelled_requests_total")
          .Help("Requests stopped before a healthy finish, by reason.")
          .Register(*registry);

  std::mutex mu;  // guards the maps below (families are created on first use)
  std::map<std::string, prometheus::Family<prometheus::Counter>*, std::less<>> counter_families;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*, std::less<>> gauge_families;
  std::map<std::string, std::uint64_t, std::less<>> last_totals;
  std::vector<std::function<void(ServerMetrics&)>> collectors;
};

ServerMetrics::ServerMetrics() : impl_(std::make_unique<Impl>()) {}
ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_request(std::string_view route, int status, double seconds) {
  impl_->requests.Add({{"route", std::string(route)}, {"code", std::to_string(status)}})
      .Increment();
  impl_->request_seconds.Add({{"route", std::string(route)}}, latency_buckets()).Observe(seconds);
}

void ServerMetrics::observe_ttft(double s) { impl_->ttft.Observe(s); }
void ServerMetrics::observe_inter_token(double s) { impl_->inter_token.Observe(s); }
void ServerMetrics::observe_phase(std::string_view phase, double s) {
  impl_->phase_seconds.Add({{"phase", std::string(phase)}}, phase_buckets()).Observe(s);
}

void ServerMetrics::add_tokens(std::int64_t prompt, std::int64_t cached, std::int64_t generated) {
  impl_->prompt_tokens.Increment(static_cast<double>(prompt));
  impl_->cached_tokens.Increment(static_cast<double>(cached));
  impl_->generated_tokens.Increment(static_cast<double>(generated));
}

void ServerMetrics::set_queue_depth(std::int64_t n) {
  impl_->queue_depth.Set(static_cast<double>(n));
}
void ServerMetrics::set_active_sequences(std::int64_t n) {
  impl_->active.Set(static_cast<double>(n));
}

void ServerMetrics::add_cancelled(std::string_view reason) {
  impl_->cancelled.Add({{"reason", std::string(reason)}}).Increment();
}

void ServerMetrics::sync_counter(std::string_view name, std::string_view help,
                                 std::string_view labels, std::uint64_t total) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->counter_families.find(name);
  if (it == impl_->counter_families.end()) {
    auto& fam = prometheus::BuildCounter()
                    .Name(std::string(name))
                    .Help(std::string(help))
                    .Register(*impl_->registry);
    it = impl_->counter_families.emplace(std::string(name), &fam).first;
  }
  std::string key = std::string(name) + "{" + std::string(labels) + "}";
  std::uint64_t& last = impl_->last_totals[key];
  // A reset store (POST /v1/cache/reset keeps counters, but a restarted one would not) must not
  // make a Prometheus counter go down: only increases are added.
  auto& counter = it->second->Add(parse_labels(labels));
  if (total > last) counter.Increment(static_cast<double>(total - last));
  last = std::max(last, total);
}

void ServerMetrics::set_gauge(std::string_view name, std::string_view help, std::string_view labels,
                              double value) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->gauge_families.find(name);
  if (it == impl_->gauge_families.end()) {
    auto& fam = prometheus::BuildGauge()
                    .Name(std::string(name))
                    .Help(std::string(help))
                    .Register(*impl_->registry);
    it = impl_->gauge_families.emplace(std::string(name), &fam).first;
  }
  it->second->Add(parse_labels(labels)).Set(value);
}

void ServerMetrics::add_collector(std::function<void(ServerMetrics&)> collect) {
  std::lock_guard lock(impl_->mu);
  impl_->collectors.push_back(std::move(collect));
}

std::string ServerMetrics::render() {
  std::vector<std::function<void(ServerMetrics&)>> collectors;
  {
    std::lock_guard lock(impl_->mu);
    collectors = impl_->collectors;
  }
  for (auto& c : collectors) c(*this);
  prometheus::TextSerializer serializer;
  return serializer.Serialize(impl_->registry->Collect());
}

}  // namespace recur::server
