// Gated delta rule and Mamba2 scan: every runnable ISA against the reference, split invariance
// (one call vs chunks with the carried state), thread invariance, and a one-step hand check.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/reference.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::random_floats;

constexpr std::int64_t kChunks[] = {1, 5, 1, 17, 8};  // 32 tokens

// Dv of 35, 80, 24 and 128 reach the widths of the column-block path on both vector ISAs
// (AVX-512: 1-4 vectors of 16, partial ones; AVX2: 1-8 vectors of 8, its two halves of 4, partial
// ones) and the released geometry (Dk = Dv = 128).
void check_gated_delta(std::int64_t dk, std::int64_t dv) {
  const std::int64_t hk = 2, hv = 4, n_tok = 32;
  const std::int64_t stride = 2 * hk * dk + hv * dv + 3;
  auto qkv = random_floats(static_cast<std::size_t>(n_tok * stride), 1);
  auto g = random_floats(static_cast<std::size_t>(n_tok * hv), 2, -2, 0);
  auto beta = random_floats(g.size(), 3, 0, 1);
  const GatedDeltaInputs in{.q = qkv.data(),
                            .k = qkv.data() + hk * dk,
                            .v = qkv.data() + 2 * hk * dk,
                            .g = g.data(),
                            .beta = beta.data()};
  const GatedDeltaShape shape{.n_tokens = n_tok,
                              .n_k_heads = hk,
                              .n_v_heads = hv,
                              .k_dim = dk,
                              .v_dim = dv,
                              .qkv_stride = stride};
  const auto state_size = static_cast<std::size_t>(hv * dk * dv);
  const auto out_size = static_cast<std::size_t>(n_tok * hv * dv);
  ThreadPool pool1(1), pool3(3);
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    auto s0 = random_floats(state_size, 4);
    auto s_whole = s0, s_ref = s0, s_parts = s0;
    std::vector<float> whole(out_size), want(out_size), parts(out_size);
    gated_delta_rule(pool3, in, s_whole.data(), whole.data(), shape);
    for (std::int64_t j = 0; j < hv; ++j)
      ref::gated_delta_head(in, s_ref.data() + j * dk * dv, want.data(), shape, j);
    // The vector forms run the reference's loops over Dv unchanged: same bytes on every ISA.
    ASSERT_TRUE(testing::same_bytes(whole.data(), want.data(), out_size)) << isa_name(isa);
    ASSERT_TRUE(testing::same_bytes(s_whole.data(), s_ref.data(), state_size)) << isa_name(isa);
    std::int64_t t0 = 0;
    for (std::int64_t len : kChunks) {
      GatedDeltaInputs ci = in;
      ci.q += t0 * stride, ci.k += t0 * stride, ci.v += t0 * stride;
      ci.g += t0 * hv, ci.beta += t0 * hv;
      GatedDeltaShape cs = shape;
      cs.n_tokens = len;
      gated_delta_rule(t0 % 2 ? pool1 : pool3, ci, s_parts.data(), parts.data() + t0 * hv * dv, cs);
      t0 += len;
    }
    ASSERT_EQ(t0, n_tok);
    ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), out_size)) << isa_name(isa);
    ASSERT_TRUE(testing::same_bytes(s_parts.data(), s_whole.data(), state_size));
  }
}

TEST(GatedDelta, MatchesReferenceAndIsSplitInvariant) {
  check_gated_delta(19, 35);
  check_gated_delta(32, 80);
  check_gated_delta(8, 24);
  check_gated_delta(128, 128);
}

// A batched decode step's dispatch: jobs of 1 token (the per-head loop), 5 and 17 (the column
// blocks), each with its own state, give the bytes of each alone, on every ISA.
TEST(GatedDelta, BatchedJobsEqualEachAlone) {
  const std::int64_t hk = 2, hv = 4, dk = 19, dv = 80;
  const std::int64_t stride = 2 * hk * dk + hv * dv;
  const std::vector<std::int64_t> tokens = {1, 5, 17};
  // 4 + 8 + 8 tasks on the vector ISAs (scalar: 4 + 4 + 4): with 2 threads the pool's runs of 5
  // (scalar 3) start inside jobs and cross from one job into the next; with 3, runs of 4 (2).
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (Isa isa : testing::runnable_isas()) {
      testing::ScopedIsa scoped(isa);
      std::vector<std::vector<float>> qkv, g, beta, states, alone, batched;
      std::vector<GatedDeltaJob> jobs;
      for (std::size_t j = 0; j < tokens.size(); ++j) {
        const auto seed = static_cast<std::uint32_t>(10 * j);
        qkv.push_back(random_floats(static_cast<std::size_t>(tokens[j] * stride), seed + 1));
        g.push_back(random_floats(static_cast<std::size_t>(tokens[j] * hv), seed + 2, -2, 0));
        beta.push_back(random_floats(static_cast<std::size_t>(tokens[j] * hv), seed + 3, 0, 1));
        states.push_back(random_floats(static_cast<std::size_t>(hv * dk * dv), seed + 4));
        alone.emplace_back(static_cast<std::size_t>(tokens[j] * hv * dv));
        batched.emplace_back(static_cast<std::size_t>(tokens[j] * hv * dv));
      }
      auto batched_states = states;
      for (std::size_t j = 0; j < tokens.size(); ++j) {
        const GatedDeltaJob job{.in = {.q = qkv[j].data(),
                                       .k = qkv[j].data() + hk * dk,
                                       .v = qkv[j].data() + 2 * hk * dk,
                                       .g = g[j].data(),
                                       .beta = beta[j].data()},
                                .state = batched_states[j].data(),
                                .out = batched[j].data(),
                                .shape = {.n_tokens = tokens[j],
                                          .n_k_heads = hk,
                                          .n_v_heads = hv,
                                          .k_dim = dk,
                                          .v_dim = dv,
                                          .qkv_stride = stride}};
        jobs.push_back(job);
        gated_delta_rule(pool, job.in, states[j].data(), alone[j].data(), job.shape);
      }
      gated_delta_rule_batch(pool, jobs);
      for (std::size_t j = 0; j < tokens.size(); ++j) {
        ASSERT_TRUE(testing::same_bytes(batched[j].data(), alone[j].data(), alone[j].size()))
            << isa_name(isa) << " job " << j << ", " << threads << " threads";
        ASSERT_TRUE(
            testing::same_bytes(batched_states[j].data(), states[j].data(), states[j].size()));
      }
    }
  }
}

TEST(GatedDelta, OneStepByHand) {
  // Dk = Dv = 1, S = 2, g = ln 0.5, beta = 0.5, k = 1, v = 3, q = 2:
  // S = 1; u = 0.5 * (3 - 1) = 1; S = 2; o = 4.
  const float q = 2, k = 1, v = 3, g = std::log(0.5f), beta = 0.5f;
  float s = 2, o = 0;
  ThreadPool pool(1);
  gated_delta_rule(
      pool, {.q = &q, .k = &k, .v = &v, .g = &g, .beta = &beta}, &s, &o,
      {.n_tokens = 1, .n_k_heads = 1, .n_v_heads = 1, .k_dim = 1, .v_dim = 1, .qkv_stride = 0});
  EXPECT_FLOAT_EQ(s, 2.0f);
  EXPECT_FLOAT_EQ(o, 4.0f);
  float a = 0.3f, b = -1.0f, a_log = 0.2f, dt_bias = 0.1f, gg, bb;
  gated_delta_gates(&a, &b, &a_log, &dt_bias, &gg, &bb, 1, 1);
  EXPECT_FLOAT_EQ(gg, -std::exp(0.2f) * std::log1p(std::exp(0.4f)));
  EXPECT_FLOAT_EQ(bb, 1.0f / (1.0f + std::exp(1.0f)));
}

// d_state 35 takes the in-memory row path, 64 and 128 the in-register one.
void check_mamba2(std::int64_t n) {
  const std::int64_t h = 4, p = 7, groups = 2, n_tok = 32;
  const std::int64_t xs = h * p + 2 * groups * n + 1;
  auto xbc = random_floats(static_cast<std::size_t>(n_tok * xs), 1);
  auto dt = random_floats(static_cast<std::size_t>(n_tok * (h + 2)), 2, -4, 2);
  auto dt_bias = random_floats(static_cast<std::size_t>(h), 3);
  auto a_log = random_floats(static_cast<std::size_t>(h), 4);
  auto d = random_floats(static_cast<std::size_t>(h), 5);
  const Mamba2Inputs in{.x = xbc.data(),
                        .b = xbc.data() + h * p,
                        .c = xbc.data() + h * p + groups * n,
                        .dt_raw = dt.data(),
                        .dt_bias = dt_bias.data(),
                        .a_log = a_log.data(),
                        .d = d.data()};
  const Mamba2Shape shape{.n_tokens = n_tok,
                          .n_heads = h,
                          .head_dim = p,
                          .d_state = n,
                          .n_groups = groups,
                          .x_stride = xs,
                          .dt_stride = h + 2,
                          .dt_min = 0.0f,
                          .dt_max = 1.5f};
  const auto state_size = static_cast<std::size_t>(h * p * n);
  const auto out_size = static_cast<std::size_t>(n_tok * h * p);
  ThreadPool pool1(1), pool3(3);
  std::vector<std::vector<float>> by_isa, states_by_isa;
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    auto s0 = random_floats(state_size, 6);
    auto s_whole = s0, s_ref = s0, s_parts = s0;
    std::vector<float> whole(out_size), want(out_size), parts(out_size);
    mamba2_scan(pool3, in, s_whole.data(), whole.data(), shape);
    for (std::int64_t hh = 0; hh < h; ++hh)
      ref::mamba2_head(in, s_ref.data() + hh * p * n, want.data(), shape, hh);
    for (std::size_t i = 0; i < out_size; ++i)
      ASSERT_NEAR(whole[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << isa_name(isa) << i;
    std::int64_t t0 = 0;
    for (std::int64_t len : kChunks) {
      Mamba2Inputs ci = in;
      ci.x += t0 * xs, ci.b += t0 * xs, ci.c += t0 * xs, ci.dt_raw += t0 * (h + 2);
      Mamba2Shape cs = shape;
      cs.n_tokens = len;
      mamba2_scan(t0 % 2 ? pool1 : pool3, ci, s_parts.data(), parts.data() + t0 * h * p, cs);
      t0 += len;
    }
    ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), out_size)) << isa_name(isa);
    ASSERT_TRUE(testing::same_bytes(s_parts.data(), s_whole.data(), state_size));
    if (isa == Isa::kAvx2 || isa == Isa::kAvx512) {
      by_isa.push_back(whole);
      states_by_isa.push_back(s_whole);
    }
  }
  // avx2 and avx512 run the same fixed-order sums per lane: identical bytes, outputs and states.
  for (const auto& v : by_isa)
    ASSERT_TRUE(testing::same_bytes(v.data(), by_isa[0].data(), out_size));
  for (const auto& v : states_by_isa)
    ASSERT_TRUE(testing::same_bytes(v.data(), states_by_isa[0].data(), state_size));
}

TEST(Mamba2, MatchesReferenceAndIsSplitInvariant) {
  for (std::int64_t n : {35, 64, 128}) check_mamba2(n);
  if (testing::vector_isas().size() < 2) GTEST_SKIP() << testing::kNeedsTwoVectorIsas;
}

// A batched decode step's dispatch: jobs of 1, 5 and 17 tokens, each with its own state, give the
// bytes of each scanned alone (outputs and states).
TEST(Mamba2, BatchedJobsEqualEachAlone) {
  const std::int64_t h = 3, p = 5, groups = 1;
  ThreadPool pool(3);
  for (std::int64_t n : {35, 128}) {
    const std::int64_t xs = h * p + 2 * groups * n;
    const std::vector<std::int64_t> tokens = {1, 5, 17};
    std::vector<std::vector<float>> xbc, dt, states, alone, batched;
    std::vector<Mamba2Job> jobs;
    auto dt_bias = random_floats(static_cast<std::size_t>(h), 3);
    auto a_log = random_floats(static_cast<std::size_t>(h), 4);
    auto d = random_floats(static_cast<std::size_t>(h), 5);
    for (std::size_t j = 0; j < tokens.size(); ++j) {
      const auto seed = static_cast<std::uint32_t>(10 * j);
      xbc.push_back(random_floats(static_cast<std::size_t>(tokens[j] * xs), seed + 1));
      dt.push_back(random_floats(static_cast<std::size_t>(tokens[j] * h), seed + 2, -4, 2));
      states.push_back(random_floats(static_cast<std::size_t>(h * p * n), seed + 3));
      alone.emplace_back(static_cast<std::size_t>(tokens[j] * h * p));
      batched.emplace_back(static_cast<std::size_t>(tokens[j] * h * p));
    }
    auto batched_states = states;
    for (std::size_t j = 0; j < tokens.size(); ++j) {
      const Mamba2Job job{.in = {.x = xbc[j].data(),
                                 .b = xbc[j].data() + h * p,
                                 .c = xbc[j].data() + h * p + groups * n,
                                 .dt_raw = dt[j].data(),
                                 .dt_bias = dt_bias.data(),
                                 .a_log = a_log.data(),
                                 .d = d.data()},
                          .state = batched_states[j].data(),
                          .y = batched[j].data(),
                          .shape = {.n_tokens = tokens[j],
                                    .n_heads = h,
                                    .head_dim = p,
                                    .d_state = n,
                                    .n_groups = groups,
                                    .x_stride = xs,
                                    .dt_stride = h,
                                    .dt_min = 0.0f,
                                    .dt_max = 1.5f}};
      jobs.push_back(job);
      mamba2_scan(pool, job.in, states[j].data(), alone[j].data(), job.shape);
    }
    mamba2_scan_batch(pool, jobs);
    for (std::size_t j = 0; j < tokens.size(); ++j) {
      ASSERT_TRUE(testing::same_bytes(batched[j].data(), alone[j].data(), alone[j].size()))
          << "job " << j << " d_state " << n;
      ASSERT_TRUE(
          testing::same_bytes(batched_states[j].data(), states[j].data(), states[j].size()));
    }
  }
}

TEST(Mamba2, OneStepByHand) {
  // H = P = N = G = 1; dt_raw + bias = 0 -> dt = ln 2; A = -1 -> dA = 0.5;
  // S = 0.5 * 2 + ln2 * x(=1) * B(=2) ; y = S * C(=3) + D(=0.5) * x.
  const float x = 1, b = 2, c = 3, dt_raw = -0.25f, dt_bias = 0.25f, a_log = 0.0f, d = 0.5f;
  float s = 2, y = 0;
  ThreadPool pool(1);
  mamba2_scan(
      pool,
      {.x = &x, .b = &b, .c = &c, .dt_raw = &dt_raw, .dt_bias = &dt_bias, .a_log = &a_log, .d = &d},
      &s, &y,
      {.n_tokens = 1,
       .n_heads = 1,
       .head_dim = 1,
       .d_state = 1,
       .n_groups = 1,
       .x_stride = 1,
       .dt_stride = 1,
       .dt_min = 0.0f,
       .dt_max = std::numeric_limits<float>::infinity()});
  const float ln2 = std::log(2.0f);
  EXPECT_NEAR(s, 1.0f + ln2 * 2.0f, 1e-6f);
  EXPECT_NEAR(y, (1.0f + ln2 * 2.0f) * 3.0f + 0.5f, 1e-5f);
}

}  // namespace
}  // namespace recur::kernels
