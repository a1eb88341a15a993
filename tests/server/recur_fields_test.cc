// recur's own response fields (x_recur_cache, x_recur_timing): added to the JSON value as its last
// fields, and serialized to the very bytes the earlier text splice produced, so clients that
// compare bodies see no change.
#include "server/recur_fields.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "server/openai_response.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

// Without an arrival time, the phases measured from it (parse, ttft, total) are 0: the object
// does not depend on the clock.
RequestTiming engine_only_timing(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> seconds(0, 30);
  RequestTiming t;
  t.render_s = seconds(rng);
  t.tokenize_s = seconds(rng) / 1000;
  t.engine = {.queue_s = seconds(rng),
              .restore_s = 0.003,  // a whole number of milliseconds
              .prefill_s = seconds(rng),
              .forward_s = 0,
              .snapshot_s = seconds(rng) / 1e4,
              .decode_s = 2.5,
              .prefill_steps = static_cast<std::int64_t>(rng() % 100),
              .prefill_tokens = static_cast<std::int64_t>(rng() % 100000)};
  return t;
}

// The x_recur_timing text as the server wrote it before it was a JSON value.
std::string timing_as_formatted(const RequestTiming& t) {
  auto ms = [](double s) { return std::round(s * 1e5) / 100; };
  const engine::EngineTiming& e = t.engine;
  return fmt::format(
      "{{\"parse_ms\":{},\"render_ms\":{},\"tokenize_ms\":{},\"queue_ms\":{},\"restore_ms\":{},"
      "\"prefill_ms\":{},\"forward_ms\":{},\"snapshot_ms\":{},\"ttft_ms\":{},\"decode_ms\":{},"
      "\"total_ms\":{},\"prefill_tokens\":{},\"prefill_steps\":{}}}",
      0.0, ms(t.render_s), ms(t.tokenize_s), ms(e.queue_s), ms(e.restore_s), ms(e.prefill_s),
      ms(e.forward_s), ms(e.snapshot_s), 0.0, ms(e.decode_s), 0.0, e.prefill_tokens,
      e.prefill_steps);
}

TEST(RecurFields, AddedAsTheLastFieldsTraceFirst) {
  const engine::CacheTrace trace{.hit = true, .hit_tokens = 37, .store = "snapshot"};
  std::mt19937_64 rng(1);
  const RequestTiming timing = engine_only_timing(rng);
  json body = {{"id", "x"}, {"usage", {{"prompt_tokens", 3}}}};
  add_recur_fields(body, {.trace = &trace, .timing = &timing});
  std::vector<std::string> keys;
  for (const auto& [k, v] : body.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "usage", "x_recur_cache", "x_recur_timing"}));
  EXPECT_EQ(body["x_recur_cache"], trace.to_header());
  EXPECT_EQ(body["x_recur_timing"]["prefill_tokens"], timing.engine.prefill_tokens);

  json bare = {{"id", "x"}};
  add_recur_fields(bare, {});
  EXPECT_EQ(bare.dump(), R"({"id":"x"})");
}

TEST(RecurFields, SerializeToTheBytesOfTheFormerTextSplice) {
  const engine::CacheTrace trace{.hit = false};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const RequestTiming timing = engine_only_timing(rng);
    json body = {{"id", "x"}, {"choices", json::array()}};
    const std::string api_only = body.dump();
    add_recur_fields(body, {.trace = &trace, .timing = &timing});
    const std::string spliced = api_only.substr(0, api_only.size() - 1) + ",\"x_recur_cache\":\"" +
                                trace.to_header() +
                                "\",\"x_recur_timing\":" + timing_as_formatted(timing) + "}";
    ASSERT_EQ(body.dump(), spliced) << i;
  }
}

TEST(RecurFields, TimingInsideTheLastSseEvent) {
  std::mt19937_64 rng(3);
  const RequestTiming timing = engine_only_timing(rng);
  const ResponseMeta meta{.id = "cmpl-1", .model = "m", .created = 1};
  const std::string plain = text_chunk_sse(meta, "", "stop");
  const std::string event = text_chunk_sse(meta, "", "stop", {.timing = &timing});
  ASSERT_TRUE(event.starts_with("data: ") && event.ends_with("}\n\n")) << event;
  EXPECT_EQ(event, plain.substr(0, plain.size() - 3) +
                       ",\"x_recur_timing\":" + timing_as_formatted(timing) + "}\n\n");
}

TEST(RecurFields, TraceCommentEndsAStream) {
  const engine::CacheTrace trace{
      .hit = true, .hit_tokens = 5, .store = "prefix", .origin = "warmup"};
  EXPECT_EQ(cache_trace_comment(trace),
            ": x-recur-cache hit; tokens=5; store=prefix; origin=warmup\n\n");
}

}  // namespace
}  // namespace recur::server
