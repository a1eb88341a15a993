// The mixture-of-experts router (model/moe.h): softmax in f32, top-k by rank with the lower expert
// index first on equal probabilities, renormalised only when asked.
#include "model/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace recur::model {
namespace {

struct Routed {
  std::vector<std::int32_t> experts;
  std::vector<float> weights;
};

Routed route(std::vector<float> logits, std::int64_t top_k, bool normalize) {
  const auto n_experts = static_cast<std::int64_t>(logits.size());
  Routed r{std::vector<std::int32_t>(static_cast<std::size_t>(top_k)),
           std::vector<float>(static_cast<std::size_t>(top_k))};
  route_top_k(logits.data(), 1, n_experts, top_k, normalize, r.experts.data(), r.weights.data());
  return r;
}

TEST(MoeRouter, RanksByProbabilityAndBreaksTiesByLowerIndex) {
  const Routed r = route({1.0f, 3.0f, 2.0f, 3.0f, 0.5f}, 3, false);
  EXPECT_EQ(r.experts, (std::vector<std::int32_t>{1, 3, 2}));
  // Unnormalised: the softmax probabilities themselves.
  double sum = 0.0;
  for (float z : {1.0f, 3.0f, 2.0f, 3.0f, 0.5f}) sum += std::exp(static_cast<double>(z) - 3.0);
  EXPECT_NEAR(r.weights[0], 1.0 / sum, 1e-6);
  EXPECT_EQ(r.weights[0], r.weights[1]);
  EXPECT_NEAR(r.weights[2], std::exp(-1.0) / sum, 1e-6);
}

TEST(MoeRouter, AllEqualLogitsPickTheFirstExperts) {
  const Routed r = route(std::vector<float>(8, 0.25f), 4, true);
  EXPECT_EQ(r.experts, (std::vector<std::int32_t>{0, 1, 2, 3}));
  for (float w : r.weights) EXPECT_EQ(w, 0.25f);
}

TEST(MoeRouter, NormalisedWeightsSumToOne) {
  const Routed r = route({0.1f, -2.0f, 4.0f, 1.5f, 1.5f, -0.3f}, 2, true);
  EXPECT_EQ(r.experts, (std::vector<std::int32_t>{2, 3}));
  EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0f, 1e-6f);
  EXPECT_NEAR(r.weights[0] / r.weights[1], std::exp(2.5), 1e-3);
}

// gpt-oss's rule: the top k raw logits (lower index first on ties), then the softmax over just
// those k: the weights sum to one and keep the logits' differences as log-ratios.
TEST(MoeRouter, SoftmaxOfTopKLogits) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  std::vector<std::int32_t> experts(3);
  std::vector<float> weights(3);
  route_top_k(logits.data(), 1, 5, 3, RouterRule{.score = RouterRule::Score::kSoftmaxOfTopK},
              experts.data(), weights.data());
  EXPECT_EQ(experts, (std::vector<std::int32_t>{1, 3, 4}));
  const double z = 2 * std::exp(0.0) + std::exp(-1.0);  // relative to the max logit 2
  EXPECT_NEAR(weights[0], 1.0 / z, 1e-6);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_NEAR(weights[2], std::exp(-1.0) / z, 1e-6);
  EXPECT_EQ(logits[0], 0.5f);  // the logits are left as they were: no softmax over all experts
}

TEST(MoeRouter, RowsAreRoutedIndependently) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 2.0f, 1.0f, 0.0f};
  std::vector<std::int32_t> experts(4);
  std::vector<float> weights(4);
  route_top_k(logits.data(), 2, 3, 2, true, experts.data(), weights.data());
  EXPECT_EQ(experts, (std::vector<std::int32_t>{2, 1, 0, 1}));
}

// The one-pass selection against the definition, rank by rank: the largest key not yet taken, the
// lowest index among equal keys; on rows drawn from few distinct logits (ties everywhere), with
// and without a selection bias, every k up to all the experts.
TEST(MoeRouter, OnePassSelectionEqualsRankByRank) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> level(0, 5);
  for (std::int64_t n_experts : {1, 2, 7, 64, 300}) {
    for (bool biased : {false, true}) {
      std::vector<float> bias(static_cast<std::size_t>(n_experts));
      for (float& b : bias) b = biased ? 0.01f * static_cast<float>(level(rng)) : 0.0f;
      for (std::int64_t top_k = 1; top_k <= std::min<std::int64_t>(n_experts, 12); ++top_k) {
        std::vector<float> logits(static_cast<std::size_t>(n_experts));
        for (float& z : logits) z = 0.5f * static_cast<float>(level(rng));
        std::vector<float> probs = logits;
        std::vector<std::int32_t> got(static_cast<std::size_t>(top_k));
        std::vector<float> weights(got.size());
        const RouterRule rule{.selection_bias = biased ? bias.data() : nullptr};
        route_top_k(probs.data(), 1, n_experts, top_k, rule, got.data(), weights.data());
        std::vector<std::int32_t> want;
        for (std::int64_t j = 0; j < top_k; ++j) {
          std::int32_t best = -1;
          for (std::int32_t e = 0; e < n_experts; ++e) {
            if (std::find(want.begin(), want.end(), e) != want.end()) continue;
            const float v = probs[static_cast<std::size_t>(e)] + bias[static_cast<std::size_t>(e)];
            if (best < 0 ||
                v > probs[static_cast<std::size_t>(best)] + bias[static_cast<std::size_t>(best)]) {
              best = e;
            }
          }
          want.push_back(best);
        }
        ASSERT_EQ(got, want) << n_experts << " experts, top " << top_k << (biased ? ", bias" : "");
        for (std::int64_t j = 0; j < top_k; ++j) {
          ASSERT_EQ(weights[static_cast<std::size_t>(j)],
                    probs[static_cast<std::size_t>(want[static_cast<std::size_t>(j)])]);
        }
      }
    }
  }
}

// A row of NaN logits (a corrupt checkpoint's) still names top_k distinct, valid experts.
TEST(MoeRouter, NanLogitsStillPickDistinctExperts) {
  const Routed r = route(std::vector<float>(6, std::nanf("")), 3, false);
  std::vector<std::int32_t> sorted = r.experts;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  for (std::int32_t e : sorted) EXPECT_TRUE(e >= 0 && e < 6);
}

}  // namespace
}  // namespace recur::model
