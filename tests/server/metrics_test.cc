#include "server/metrics.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

TEST(Metrics, RendersExpositionFormat) {
  ServerMetrics m;
  m.observe_request("/v1/chat/completions", 200, 0.5);
  m.observe_ttft(0.02);
  m.add_tokens(100, 80, 7);
  m.set_queue_depth(3);
  std::string text = m.render();
  EXPECT_NE(text.find("# TYPE recur_http_requests_total counter"), std::string::npos);
  EXPECT_NE(text.find("recur_http_requests_total{code=\"200\",route=\"/v1/chat/completions\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("recur_cached_prompt_tokens_total 80"), std::string::npos);
  EXPECT_NE(text.find("recur_queue_depth 3"), std::string::npos);
  EXPECT_NE(text.find("recur_time_to_first_token_seconds_bucket{le=\"0.025\"} 1"),
            std::string::npos);
}

TEST(Metrics, SyncCounterAddsOnlyIncreases) {
  ServerMetrics m;
  m.sync_counter("recur_cache_hits_total", "Hits.", "store=snapshot", 5);
  m.sync_counter("recur_cache_hits_total", "Hits.", "store=snapshot", 9);
  m.sync_counter("recur_cache_hits_total", "Hits.", "store=snapshot", 2);  // source restarted
  m.sync_counter("recur_cache_hits_total", "Hits.", "store=prefix", 1);
  m.set_gauge("recur_cache_bytes", "Bytes.", "store=snapshot", 1024);
  std::string text = m.render();
  EXPECT_NE(text.find("recur_cache_hits_total{store=\"snapshot\"} 9"), std::string::npos) << text;
  EXPECT_NE(text.find("recur_cache_hits_total{store=\"prefix\"} 1"), std::string::npos);
  EXPECT_NE(text.find("recur_cache_bytes{store=\"snapshot\"} 1024"), std::string::npos);
}

}  // namespace
}  // namespace recur::server
