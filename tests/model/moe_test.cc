// The mixture-of-experts router (model/moe.h): softmax in f32, top-k by rank with the lower expert
// index first on equal probabilities, renormalised only when asked.
#include "model/moe.h"

#include <gtest/gtest.h>

#include <cmath>
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

TEST(MoeRouter, RowsAreRoutedIndependently) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 2.0f, 1.0f, 0.0f};
  std::vector<std::int32_t> experts(4);
  std::vector<float> weights(4);
  route_top_k(logits.data(), 2, 3, 2, true, experts.data(), weights.data());
  EXPECT_EQ(experts, (std::vector<std::int32_t>{2, 1, 0, 1}));
}

}  // namespace
}  // namespace recur::model
