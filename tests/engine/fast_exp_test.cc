#include "engine/fast_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace recur::engine {
namespace {

// The vector lanes give the scalar form's bits (a draw must not depend on where a token falls in
// a block of four), and both stay within 3e-7 of exp.
TEST(FastExp, LanesMatchScalarAndExp) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-100.0f, 0.0f), near(-2.0f, 0.0f);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) x.push_back(i % 2 ? wide(rng) : near(rng));
  x.insert(x.end(), {0.0f, -0.0f, -87.0f, -87.5f, -1e-30f, -0.3465736f, -0.3465737f, -200.0f});
  const float shift = 1.5f;
  std::vector<float> in(x.size()), out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) in[i] = x[i] + shift;
  exp_shifted(in.data(), shift, out.data(), in.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = in[i] - shift;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]),
              std::bit_cast<std::uint32_t>(exp_nonpositive(v)))
        << v;
    const double want = v < -87.0f ? 0.0 : std::exp(static_cast<double>(v));
    ASSERT_LE(std::abs(out[i] - want), 3e-7 * want) << v;
  }
}

}  // namespace
}  // namespace recur::engine
