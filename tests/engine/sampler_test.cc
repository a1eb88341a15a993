#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace recur::engine {
namespace {

std::vector<float> logits_of_probs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::set<TokenId> support(const SamplingParams& p, const std::vector<float>& logits, int draws) {
  std::set<TokenId> seen;
  for (int i = 0; i < draws; ++i) {
    SamplingParams q = p;
    q.seed = static_cast<std::uint64_t>(i);
    Sampler s(q, {});
    seen.insert(s.sample(logits).id);
  }
  return seen;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s({.temperature = 0}, {});
  std::vector<float> l = {1, 3, 3, 2};
  EXPECT_EQ(s.sample(l).id, 1);
  Sampler k1({.temperature = 1, .top_k = 1}, {});
  EXPECT_EQ(k1.sample(l).id, 1);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  std::vector<float> l(1000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(i * 0.37));
  auto run = [&](std::uint64_t seed) {
    Sampler s({.temperature = 1.0f, .seed = seed}, {});
    std::vector<TokenId> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(l).id);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, RngIsSplitmix64) {
  // Published first outputs of splitmix64 seeded with 0: the stream must never change, or seeded
  // requests would stop reproducing across versions.
  Rng r(0);
  EXPECT_EQ(r.next_u64(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.next_u64(), 0x6E789E6AA1B965F4ull);
}

TEST(Sampler, TopKLimitsSupport) {
  auto l = logits_of_probs({0.4, 0.3, 0.2, 0.1});
  EXPECT_EQ(support({.temperature = 1, .top_k = 2}, l, 300), (std::set<TokenId>{0, 1}));
  EXPECT_EQ(support({.temperature = 1}, l, 300), (std::set<TokenId>{0, 1, 2, 3}));
}

TEST(Sampler, TopPKeepsSmallestSetReachingMass) {
  auto l = logits_of_probs({0.5, 0.3, 0.15, 0.05});
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.79f}, l, 300), (std::set<TokenId>{0, 1}));
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.81f}, l, 300), (std::set<TokenId>{0, 1, 2}));
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.1f}, l, 100), (std::set<TokenId>{0}));
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  auto l = logits_of_probs({0.5, 0.3, 0.15, 0.05});
  // keep p >= 0.25 * 0.5 = 0.125
  EXPECT_EQ(support({.temperature = 1, .min_p = 0.25f}, l, 300), (std::set<TokenId>{0, 1, 2}));
}

TEST(Sampler, FlatLargeVocabularyWithTopP) {
  std::vector<float> l(200000, 0.0f);
  Sampler s({.temperature = 1, .top_p = 0.9f, .seed = 7}, {});
  for (int i = 0; i < 3; ++i) {
    TokenId id = s.sample(l).id;
    // Equal logits sort by id, so the nucleus is the lowest 90% of ids.
    EXPECT_LT(id, 180001);
    EXPECT_GE(id, 0);
  }
}

TEST(Sampler, FrequenciesFollowProbabilities) {
  auto l = logits_of_probs({0.7, 0.2, 0.1});
  std::vector<int> counts(3);
  Sampler s({.temperature = 1, .seed = 1}, {});
  // A sampler with no penalties ignores its history, so one sampler draws i.i.d. tokens.
  for (int i = 0; i < 4000; ++i) counts[static_cast<size_t>(s.sample(l).id)]++;
  EXPECT_NEAR(counts[0] / 4000.0, 0.7, 0.04);
  EXPECT_NEAR(counts[1] / 4000.0, 0.2, 0.04);
  EXPECT_NEAR(counts[2] / 4000.0, 0.1, 0.04);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesApplyToGeneratedTokens) {
  std::vector<float> l = {5.0f, 4.5f, 0.0f};
  Sampler presence({.temperature = 0, .presence_penalty = 1.0f}, {});
  EXPECT_EQ(presence.sample(l).id, 0);
  EXPECT_EQ(presence.sample(l).id, 1);  // 5 - 1 = 4 < 4.5
  EXPECT_EQ(presence.sample(l).id, 0);  // 4 vs 3.5
  Sampler frequency({.temperature = 0, .frequency_penalty = 0.3f}, {});
  EXPECT_EQ(frequency.sample(l).id, 0);  // 5
  EXPECT_EQ(frequency.sample(l).id, 0);  // 4.7
  EXPECT_EQ(frequency.sample(l).id, 1);  // 4.4 < 4.5
  Sampler prompt_only({.temperature = 0, .presence_penalty = 2.0f}, std::vector<TokenId>{0});
  EXPECT_EQ(prompt_only.sample(l).id, 0) << "presence penalty ignores the prompt";
}

TEST(Sampler, RepetitionPenaltyIncludesPrompt) {
  std::vector<float> l = {2.0f, 1.5f, -1.0f};
  Sampler s({.temperature = 0, .repetition_penalty = 1.5f}, std::vector<TokenId>{0});
  EXPECT_EQ(s.sample(l).id, 1);  // 2 / 1.5 = 1.33 < 1.5
  Sampler neg({.temperature = 0, .repetition_penalty = 2.0f}, std::vector<TokenId>{2});
  std::vector<float> l2 = {-1.5f, -1.9f, -1.0f};
  EXPECT_EQ(neg.sample(l2).id, 0);  // -1 * 2 = -2 falls below -1.5
}

TEST(Sampler, LogprobsAreTheModelsDistribution) {
  auto l = logits_of_probs({0.5, 0.25, 0.125, 0.125});
  Sampler s({.temperature = 0, .top_logprobs = 3, .logprobs = true}, {});
  SampleResult r = s.sample(l);
  EXPECT_EQ(r.id, 0);
  EXPECT_NEAR(r.logprob, std::log(0.5), 1e-6);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].id, 0);
  EXPECT_EQ(r.top[1].id, 1);
  EXPECT_EQ(r.top[2].id, 2) << "ties go to the lower id";
  EXPECT_NEAR(r.top[2].logprob, std::log(0.125), 1e-6);
}

TEST(Sampler, ValidateNamesTheField) {
  EXPECT_TRUE(validate({}).is_ok());
  struct Case {
    SamplingParams p;
    const char* field;
  };
  const Case cases[] = {{{.temperature = -1}, "temperature"},
                        {{.top_k = -2}, "top_k"},
                        {{.top_p = 0}, "top_p"},
                        {{.top_p = 1.5f}, "top_p"},
                        {{.min_p = 2}, "min_p"},
                        {{.presence_penalty = 3}, "presence_penalty"},
                        {{.frequency_penalty = -3}, "frequency_penalty"},
                        {{.repetition_penalty = 0}, "repetition_penalty"},
                        {{.top_logprobs = 21}, "top_logprobs"}};
  for (const auto& c : cases) {
    Status s = validate(c.p);
    ASSERT_FALSE(s.is_ok()) << c.field;
    EXPECT_EQ(s.message().rfind(c.field, 0), 0u) << s.message();
  }
  SamplingParams nan_t;
  nan_t.temperature = std::nanf("");
  EXPECT_FALSE(validate(nan_t).is_ok());
}

TEST(Sampler, LogitBiasBansAndForces) {
  std::vector<float> l = {1, 3, 2, 0};
  Sampler ban({.temperature = 0, .logit_bias = {{1, -100.0f}}}, {});
  EXPECT_EQ(ban.sample(l).id, 2);
  SamplingParams force{.temperature = 1, .logit_bias = {{3, 100.0f}}};
  EXPECT_EQ(support(force, l, 200), (std::set<TokenId>{3}));
  EXPECT_FALSE(validate({.logit_bias = {{0, 101.0f}}}).is_ok());
  EXPECT_EQ(validate({.logit_bias = {{7, -100.5f}}}).message(),
            "logit_bias of token 7 must be in [-100, 100], got -100.5");
}

// Only allowed tokens are drawn, from the allowed tokens' renormalised distribution; end tokens
// only when the filter allows a stop; and the same seed gives the same draws with or without
// a filter that allows everything.
TEST(Sampler, FilterDrawsOnlyAllowedTokens) {
  std::vector<float> l = logits_of_probs({0.4, 0.1, 0.2, 0.1, 0.2});
  std::vector<std::uint64_t> bits = {0b01010};  // tokens 1 and 3
  const std::vector<TokenId> stops = {4};
  std::set<TokenId> seen;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    Sampler s({.temperature = 1, .seed = seed}, {});
    auto r = s.sample(l, {.bits = bits, .stop_ids = stops});
    ASSERT_TRUE(r.has_value());
    seen.insert(r->id);
  }
  EXPECT_EQ(seen, (std::set<TokenId>{1, 3}));
  Sampler greedy({.temperature = 0}, {});
  EXPECT_EQ(greedy.sample(l, {.bits = bits, .stop_ids = stops, .allow_stop = true})->id, 4);
  Sampler also({.temperature = 0}, {});
  EXPECT_EQ(also.sample(l, {.bits = bits, .stop_ids = stops, .also = 0})->id, 0);
  std::vector<std::uint64_t> stop_only = {0b10000};  // an end token in the bits is still no stop
  Sampler none({.temperature = 0}, {});
  EXPECT_FALSE(none.sample(l, {.bits = stop_only, .stop_ids = stops}).has_value());

  std::vector<std::uint64_t> all = {0b11111};
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    SamplingParams p{.temperature = 0.8f, .top_k = 3, .top_p = 0.9f, .seed = seed};
    Sampler a(p, {}), b(p, {});
    EXPECT_EQ(a.sample(l).id, b.sample(l, {.bits = all})->id);
  }
}

}  // namespace
}  // namespace recur::engine
