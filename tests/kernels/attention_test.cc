// Causal GQA attention: every runnable ISA against the reference, a hand-checked tiny case, and
// split invariance (one prompt in one call or in chunks gives the same bytes), for f32 and bf16
// caches.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/reference.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::random_floats;

struct Cache {
  std::vector<float> k32, v32;
  std::vector<std::uint16_t> k16, v16;
  const void* k(DType t) const { return t == DType::kF32 ? (const void*)k32.data() : k16.data(); }
  const void* v(DType t) const { return t == DType::kF32 ? (const void*)v32.data() : v16.data(); }
};

Cache make_cache(std::int64_t n, std::uint32_t seed) {
  Cache c{random_floats(static_cast<std::size_t>(n), seed, -2, 2),
          random_floats(static_cast<std::size_t>(n), seed + 1),
          {},
          {}};
  for (float f : c.k32) c.k16.push_back(f32_to_bf16(f));
  for (float f : c.v32) c.v16.push_back(f32_to_bf16(f));
  return c;
}

// One prompt of n_tok tokens attended in one call (q heads contiguous).
AttentionShape whole_prompt(std::int64_t n_tok, std::int64_t n_heads, std::int64_t n_kv,
                            std::int64_t hd, DType kv) {
  return {.n_q = n_tok,
          .pos0 = 0,
          .n_kv = n_tok,
          .n_heads = n_heads,
          .n_kv_heads = n_kv,
          .head_dim = hd,
          .scale = 1.0f / std::sqrt(float(hd)),
          .kv_dtype = kv};
}

TEST(Attention, MatchesReferenceAndIsSplitInvariant) {
  const std::int64_t n_heads = 6, n_kv = 2, hd = 37, n_tok = 150;
  const Cache cache = make_cache(n_tok * n_kv * hd, 1);
  // q for all positions, heads interleaved with a gate like Qwen3.5 (head stride 2*hd).
  auto q = random_floats(static_cast<std::size_t>(n_tok * n_heads * 2 * hd), 3, -2, 2);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 3; ++t) pools.push_back(std::make_unique<ThreadPool>(t));
  std::vector<std::vector<float>> vector_isa_outputs[2];  // per kv dtype
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    for (DType kv : {DType::kF32, DType::kBF16}) {
      AttentionShape s{.n_q = n_tok,
                       .pos0 = 0,
                       .n_kv = n_tok,
                       .n_heads = n_heads,
                       .n_kv_heads = n_kv,
                       .head_dim = hd,
                       .q_head_stride = 2 * hd,
                       .scale = 1.0f / std::sqrt(float(hd)),
                       .kv_dtype = kv};
      std::vector<float> whole(static_cast<std::size_t>(n_tok * n_heads * hd));
      attention(*pools[1], q.data(), cache.k(kv), cache.v(kv), whole.data(), s);
      std::vector<float> want(whole.size());
      for (std::int64_t i = 0; i < n_tok; ++i)
        for (std::int64_t h = 0; h < n_heads; ++h)
          ref::attention_query(q.data(), cache.k(kv), cache.v(kv), want.data(), s, i, h);
      for (std::size_t i = 0; i < whole.size(); ++i)
        ASSERT_NEAR(whole[i], want[i], 2e-5f) << isa_name(isa) << " at " << i;
      // Chunks of odd sizes, each seeing only the cache filled so far, and decode steps.
      std::vector<float> parts(whole.size(), -9.0f);
      std::int64_t pos = 0, step = 0;
      for (std::int64_t len : {37, 1, 64, 1, 1, 46}) {
        AttentionShape c = s;
        c.n_q = len;
        c.pos0 = pos;
        c.n_kv = pos + len;
        attention(*pools[static_cast<std::size_t>(step++ % 3)], q.data() + pos * n_heads * 2 * hd,
                  cache.k(kv), cache.v(kv), parts.data() + pos * n_heads * hd, c);
        pos += len;
      }
      ASSERT_EQ(pos, n_tok);
      ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), whole.size()))
          << isa_name(isa) << " " << dtype_name(kv);
      if (isa == Isa::kAvx2 || isa == Isa::kAvx512) {
        vector_isa_outputs[kv == DType::kBF16].push_back(whole);
      }
    }
  }
  // avx2 and avx512 compile the same fixed-order loops: identical bytes.
  if (testing::vector_isas().size() < 2) GTEST_SKIP() << testing::kNeedsTwoVectorIsas;
  for (const auto& outs : vector_isa_outputs)
    for (const auto& v : outs) ASSERT_TRUE(testing::same_bytes(v.data(), outs[0].data(), v.size()));
}

// Head sizes that are whole 16-lane chunks take the rows-at-once tiles (vec_attention_rows.h,
// four keys at a time, written with 256-bit operations on avx2): avx2 and avx512 still give the
// same bytes, chunked or whole, close to the reference.
TEST(Attention, WholeChunkHeadsAreIdenticalAcrossIsas) {
  for (std::int64_t hd : {16, 64, 128}) {
    const std::int64_t n_heads = 4, n_kv = 2, n_tok = 131;
    const Cache cache = make_cache(n_tok * n_kv * hd, 5);
    auto q = random_floats(static_cast<std::size_t>(n_tok * n_heads * hd), 6, -2, 2);
    ThreadPool pool(2);
    for (DType kv : {DType::kF32, DType::kBF16}) {
      const AttentionShape s = whole_prompt(n_tok, n_heads, n_kv, hd, kv);
      std::vector<float> want(static_cast<std::size_t>(n_tok * n_heads * hd));
      for (std::int64_t i = 0; i < n_tok; ++i)
        for (std::int64_t h = 0; h < n_heads; ++h)
          ref::attention_query(q.data(), cache.k(kv), cache.v(kv), want.data(), s, i, h);
      std::vector<std::vector<float>> outs;
      for (Isa isa : testing::vector_isas()) {
        testing::ScopedIsa scoped(isa);
        std::vector<float> whole(want.size()), parts(want.size());
        attention(pool, q.data(), cache.k(kv), cache.v(kv), whole.data(), s);
        for (std::size_t i = 0; i < whole.size(); ++i)
          ASSERT_NEAR(whole[i], want[i], 2e-5f) << isa_name(isa) << " hd " << hd << " at " << i;
        std::int64_t pos = 0;
        for (std::int64_t len : {70, 1, 60}) {
          AttentionShape c = s;
          c.n_q = len;
          c.pos0 = pos;
          c.n_kv = pos + len;
          attention(pool, q.data() + pos * n_heads * hd, cache.k(kv), cache.v(kv),
                    parts.data() + pos * n_heads * hd, c);
          pos += len;
        }
        ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), whole.size()))
            << isa_name(isa) << " hd " << hd << " chunked";
        outs.push_back(whole);
      }
      for (const auto& o : outs)
        ASSERT_TRUE(testing::same_bytes(o.data(), outs[0].data(), o.size()))
            << "avx2 and avx512 differ at hd " << hd << " " << dtype_name(kv);
    }
  }
  if (testing::vector_isas().size() < 2) GTEST_SKIP() << testing::kNeedsTwoVectorIsas;
}

// Decode steps read a bf16 cache in place, one query's head group at a time (each K/V chunk
// widened once for the group's rows): for groups 1-4, head sizes with and without a 16-element
// tail past the 32-element chunks, and key counts across blocks and 4-key groups, every step has
// the bytes of the same query in one whole-prompt call (which widens blocks into a buffer).
TEST(Attention, DecodeStepsEqualTheWholePromptForEveryGroup) {
  if (testing::vector_isas().empty())
    GTEST_SKIP() << "the in-place bf16 decode path is vector code";
  ThreadPool pool(2);
  for (std::int64_t group : {1, 2, 3, 4, 5}) {
    for (std::int64_t hd : {16, 48, 64, 256}) {
      const std::int64_t n_kv = 2, n_heads = n_kv * group, n_tok = 139;
      const Cache cache = make_cache(n_tok * n_kv * hd, 11);
      auto q = random_floats(static_cast<std::size_t>(n_tok * n_heads * hd), 12, -2, 2);
      const AttentionShape s = whole_prompt(n_tok, n_heads, n_kv, hd, DType::kBF16);
      for (Isa isa : testing::vector_isas()) {
        testing::ScopedIsa scoped(isa);
        std::vector<float> whole(static_cast<std::size_t>(n_tok * n_heads * hd)), step(whole);
        attention(pool, q.data(), cache.k16.data(), cache.v16.data(), whole.data(), s);
        for (std::int64_t pos = 0; pos < n_tok; ++pos) {
          AttentionShape c = s;
          c.n_q = 1;
          c.pos0 = pos;
          c.n_kv = pos + 1;
          attention(pool, q.data() + pos * n_heads * hd, cache.k16.data(), cache.v16.data(),
                    step.data() + pos * n_heads * hd, c);
        }
        for (std::int64_t pos = 0; pos < n_tok; ++pos) {
          const std::size_t at = static_cast<std::size_t>(pos * n_heads * hd);
          ASSERT_TRUE(testing::same_bytes(step.data() + at, whole.data() + at,
                                          static_cast<std::size_t>(n_heads * hd)))
              << isa_name(isa) << " group " << group << " hd " << hd << " position " << pos;
        }
      }
    }
  }
}

// Head sizes 1..2x16+3 and GQA groups 1, 3: every ISA against the reference at a few positions.
TEST(Attention, OddHeadSizesMatchReference) {
  ThreadPool pool(2);
  for (std::int64_t hd : {1, 15, 16, 17, 35, 128}) {
    for (std::int64_t group : {1, 3}) {
      const std::int64_t n_kv = 2, n_heads = n_kv * group, n_tok = 70;
      const Cache cache = make_cache(n_tok * n_kv * hd, static_cast<std::uint32_t>(hd));
      auto q = random_floats(static_cast<std::size_t>(n_tok * n_heads * hd), 7, -2, 2);
      for (Isa isa : testing::runnable_isas()) {
        testing::ScopedIsa scoped(isa);
        for (DType kv : {DType::kF32, DType::kBF16}) {
          const AttentionShape s = whole_prompt(n_tok, n_heads, n_kv, hd, kv);
          std::vector<float> got(q.size()), want(q.size());
          attention(pool, q.data(), cache.k(kv), cache.v(kv), got.data(), s);
          for (std::int64_t i = 0; i < n_tok; ++i)
            for (std::int64_t h = 0; h < n_heads; ++h)
              ref::attention_query(q.data(), cache.k(kv), cache.v(kv), want.data(), s, i, h);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 2e-5f) << isa_name(isa) << " hd " << hd << " at " << i;
        }
      }
    }
  }
}

TEST(Attention, TwoKeysByHand) {
  // One head, head_dim 1: q = 1, keys 0 and ln 3, scale 1 -> weights 1/4, 3/4.
  const float q[2] = {0.0f, 1.0f};
  const float k[2] = {0.0f, std::log(3.0f)};
  const float v[2] = {4.0f, 8.0f};
  float out[2];
  ThreadPool pool(1);
  attention(pool, q, k, v, out,
            {.n_q = 2,
             .pos0 = 0,
             .n_kv = 2,
             .n_heads = 1,
             .n_kv_heads = 1,
             .head_dim = 1,
             .scale = 1.0f});
  EXPECT_FLOAT_EQ(out[0], 4.0f);  // position 0 sees only key 0
  EXPECT_NEAR(out[1], 0.25f * 4 + 0.75f * 8, 1e-5f);
}

// gpt-oss's sinks: a per-head logit joins the softmax with no value. By hand: one key of score 0
// and a sink of ln 3 give the value a weight of 1/4.
TEST(Attention, SinkByHand) {
  const float q[1] = {1.0f}, k[1] = {0.0f}, v[1] = {8.0f};
  const float sinks[1] = {std::log(3.0f)};
  float out[1];
  ThreadPool pool(1);
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    attention(pool, q, k, v, out,
              {.n_q = 1,
               .pos0 = 0,
               .n_kv = 1,
               .n_heads = 1,
               .n_kv_heads = 1,
               .head_dim = 1,
               .scale = 1.0f,
               .sinks = sinks});
    EXPECT_NEAR(out[0], 2.0f, 1e-6f) << isa_name(isa);
  }
}

// With sinks every ISA stays near the reference (computed here in double from the definition),
// chunked and whole give the same bytes, and a huge sink drives the output to 0, not NaN.
TEST(Attention, SinksMatchDefinitionAndAreSplitInvariant) {
  const std::int64_t n_heads = 4, n_kv = 2, hd = 64, n_tok = 150;
  const Cache cache = make_cache(n_tok * n_kv * hd, 11);
  auto q = random_floats(static_cast<std::size_t>(n_tok * n_heads * hd), 12, -2, 2);
  const std::vector<float> sinks = {-1.5f, 0.0f, 2.5f, 1000.0f};
  ThreadPool pool(2);
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    AttentionShape s = whole_prompt(n_tok, n_heads, n_kv, hd, DType::kF32);
    s.sinks = sinks.data();
    std::vector<float> whole(static_cast<std::size_t>(n_tok * n_heads * hd));
    attention(pool, q.data(), cache.k32.data(), cache.v32.data(), whole.data(), s);
    for (std::int64_t i = 0; i < n_tok; ++i) {
      for (std::int64_t h = 0; h < n_heads; ++h) {
        const std::int64_t kvh = h / (n_heads / n_kv);
        std::vector<double> score(static_cast<std::size_t>(i + 1));
        double m = sinks[static_cast<std::size_t>(h)];
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < hd; ++d) {
            dot += double(q[static_cast<std::size_t>((i * n_heads + h) * hd + d)]) *
                   cache.k32[static_cast<std::size_t>((j * n_kv + kvh) * hd + d)];
          }
          score[static_cast<std::size_t>(j)] = dot * s.scale;
          m = std::max(m, score[static_cast<std::size_t>(j)]);
        }
        double z = std::exp(sinks[static_cast<std::size_t>(h)] - m);
        for (double sc : score) z += std::exp(sc - m);
        for (std::int64_t d = 0; d < hd; ++d) {
          double want = 0;
          for (std::int64_t j = 0; j <= i; ++j) {
            want += std::exp(score[static_cast<std::size_t>(j)] - m) / z *
                    cache.v32[static_cast<std::size_t>((j * n_kv + kvh) * hd + d)];
          }
          const float got = whole[static_cast<std::size_t>((i * n_heads + h) * hd + d)];
          ASSERT_NEAR(got, want, 2e-5) << isa_name(isa) << " query " << i << " head " << h;
          if (h == 3) {
            ASSERT_EQ(got, 0.0f);
          }
        }
      }
    }
    std::vector<float> parts(whole.size(), -9.0f);
    std::int64_t pos = 0;
    for (std::int64_t len : {70, 1, 79}) {
      AttentionShape c = s;
      c.n_q = len, c.pos0 = pos, c.n_kv = pos + len;
      attention(pool, q.data() + pos * n_heads * hd, cache.k32.data(), cache.v32.data(),
                parts.data() + pos * n_heads * hd, c);
      pos += len;
    }
    ASSERT_TRUE(testing::same_bytes(parts.data(), whole.data(), whole.size())) << isa_name(isa);
  }
}

// attention_batch (one dispatch for several sequences, as a batched decode step does): every job
// gets the bytes of attention() on it alone, whatever the mix of prefill chunks and decode rows,
// head groups (Qwen3's 2, a group wider than a tile) and cache dtypes.
TEST(Attention, BatchEqualsSeparateCalls) {
  struct Seq {
    std::int64_t n_heads, n_kv_heads, hd, pos0, n_q;
    DType kv;
  };
  const std::vector<Seq> seqs = {{16, 8, 64, 90, 1, DType::kBF16}, {16, 8, 64, 0, 70, DType::kBF16},
                                 {6, 2, 37, 130, 1, DType::kF32},  {72, 1, 16, 10, 3, DType::kF32},
                                 {16, 8, 64, 5, 1, DType::kBF16},  {4, 4, 128, 64, 1, DType::kF32}};
  std::vector<Cache> caches;
  std::vector<std::vector<float>> qs;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = seqs[i];
    const std::int64_t n_kv = s.pos0 + s.n_q;
    caches.push_back(make_cache(n_kv * s.n_kv_heads * s.hd, static_cast<std::uint32_t>(20 + i)));
    qs.push_back(random_floats(static_cast<std::size_t>(s.n_q * s.n_heads * s.hd),
                               static_cast<std::uint32_t>(40 + i), -2, 2));
  }
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<std::vector<float>> alone, batched;
      std::vector<AttentionJob> jobs;
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        const Seq& s = seqs[i];
        const AttentionShape shape{.n_q = s.n_q,
                                   .pos0 = s.pos0,
                                   .n_kv = s.pos0 + s.n_q,
                                   .n_heads = s.n_heads,
                                   .n_kv_heads = s.n_kv_heads,
                                   .head_dim = s.hd,
                                   .scale = 1.0f / std::sqrt(float(s.hd)),
                                   .kv_dtype = s.kv};
        const auto size = static_cast<std::size_t>(s.n_q * s.n_heads * s.hd);
        alone.emplace_back(size);
        batched.emplace_back(size + 1, -9.0f);
        attention(pool, qs[i].data(), caches[i].k(s.kv), caches[i].v(s.kv), alone.back().data(),
                  shape);
        jobs.push_back({.q = qs[i].data(),
                        .k_cache = caches[i].k(s.kv),
                        .v_cache = caches[i].v(s.kv),
                        .out = batched.back().data(),
                        .shape = shape});
      }
      attention_batch(pool, jobs);
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        ASSERT_TRUE(testing::same_bytes(batched[i].data(), alone[i].data(), alone[i].size()))
            << isa_name(isa) << " threads " << threads << " job " << i;
        ASSERT_EQ(batched[i].back(), -9.0f) << "wrote past job " << i;
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels
