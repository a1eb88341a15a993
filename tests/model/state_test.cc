// Sequence state and snapshots on generated checkpoints: exact byte sizes (real snapshots equal
// the from-config formula), immutability, restore refusing a foreign model, truncation, and no
// allocation on the decode path.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/model.h"
#include "test_util.h"

// Counts heap allocations while enabled (only DecodeStepsDoNotAllocate turns it on). The
// replacement is malloc-based throughout, so GCC's new/delete pairing warning does not apply.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
// Sanitizers own operator new; the count is taken only in plain builds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RECUR_COUNT_ALLOCS 0
#else
#define RECUR_COUNT_ALLOCS 1
#endif
namespace {
std::atomic<bool> g_count_allocs{false};
std::atomic<long> g_allocs{0};
}  // namespace

#if RECUR_COUNT_ALLOCS
void* operator new(std::size_t n) {
  if (g_count_allocs.load(std::memory_order_relaxed)) g_allocs.fetch_add(1);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) std::abort();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace recur::model {
namespace {

using testing::kAllFamilies;
using testing::make_checkpoint;
using testing::TempDir;

struct Loaded {
  std::string dir;
  std::unique_ptr<Model> model;
};

Loaded load(const TempDir& tmp, modelgen::Family f, std::uint64_t seed = 3,
            modelgen::DType dtype = modelgen::DType::kBF16, const std::string& preset = "tiny") {
  Loaded l;
  l.dir = make_checkpoint(tmp,
                          std::string(modelgen::family_name(f)) + std::to_string(seed) +
                              modelgen::dtype_name(dtype) + preset,
                          f, dtype, seed, 1, preset);
  auto m = Model::load(l.dir, {.max_batch_tokens = 64, .max_logit_rows = 64});
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  if (m.is_ok()) l.model = std::move(*m);
  return l;
}

std::vector<std::int32_t> tokens_of(int n, std::int64_t vocab) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    t[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3) % vocab);
  return t;
}

std::vector<float> run(Model& m, SequenceState* s, std::span<const std::int32_t> toks) {
  ThreadPool pool(1);
  SeqChunk c{.seq = s, .tokens = toks};
  auto r = m.forward(pool, {&c, 1});
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return {};
  return {r->row(0).begin(), r->row(0).end()};
}

TEST(Snapshot, ByteSizeEqualsFromConfigFormula) {
  TempDir tmp("snap_size");
  for (auto f : kAllFamilies) {
    for (auto dtype : {modelgen::DType::kBF16, modelgen::DType::kF32}) {
      SCOPED_TRACE(std::string(modelgen::family_name(f)) + modelgen::dtype_name(dtype));
      Loaded l = load(tmp, f, 3, dtype);
      ASSERT_TRUE(l.model);
      auto config = read_file(l.dir + "/config.json");
      ASSERT_TRUE(config.is_ok());
      auto seq = l.model->new_sequence();
      const auto toks = tokens_of(50, l.model->vocab_size());
      std::size_t at = 0;
      for (std::size_t n : {1u, 12u, 37u}) {
        run(*l.model, seq.get(), std::span(toks).subspan(at, n - at));
        at = n;
        auto snap = seq->snapshot();
        EXPECT_EQ(snap->n_tokens(), static_cast<std::int64_t>(n));
        auto want = snapshot_bytes_from_config(*config, static_cast<std::int64_t>(n));
        ASSERT_TRUE(want.is_ok()) << want.status().to_string();
        EXPECT_EQ(static_cast<std::int64_t>(snap->byte_size()), *want);
        EXPECT_EQ(snap->truncatable(),
                  f == modelgen::Family::kQwen3 || f == modelgen::Family::kLlama ||
                      f == modelgen::Family::kQwen3Moe || f == modelgen::Family::kSmolLm3);
        EXPECT_EQ(snap->fingerprint(), l.model->fingerprint());
      }
    }
  }
}

TEST(Snapshot, IsImmutableAndRestoresRepeatedly) {
  TempDir tmp("snap_immut");
  for (auto f : kAllFamilies) {
    SCOPED_TRACE(modelgen::family_name(f));
    Loaded l = load(tmp, f);
    ASSERT_TRUE(l.model);
    const auto toks = tokens_of(20, l.model->vocab_size());
    auto seq = l.model->new_sequence();
    run(*l.model, seq.get(), std::span(toks).first(10));
    auto snap = seq->snapshot();
    const std::vector<std::uint8_t> before = snap->payload();
    const auto cont =
        run(*l.model, seq.get(), std::span(toks).subspan(10));  // the original goes on
    EXPECT_EQ(before, snap->payload());
    for (int i = 0; i < 2; ++i) {
      auto other = l.model->new_sequence();
      ASSERT_TRUE(other->restore(*snap).is_ok());
      EXPECT_EQ(other->n_tokens(), 10);
      const auto again = run(*l.model, other.get(), std::span(toks).subspan(10));
      ASSERT_EQ(cont.size(), again.size());
      EXPECT_EQ(0, std::memcmp(cont.data(), again.data(), cont.size() * sizeof(float)));
    }
    // Restoring into a sequence that already holds tokens replaces its state.
    ASSERT_TRUE(seq->restore(*snap).is_ok());
    const auto third = run(*l.model, seq.get(), std::span(toks).subspan(10));
    EXPECT_EQ(0, std::memcmp(cont.data(), third.data(), cont.size() * sizeof(float)));
  }
}

TEST(Snapshot, RestoreRefusesAnotherModel) {
  TempDir tmp("snap_foreign");
  Loaded a = load(tmp, modelgen::Family::kQwen3_5, 1);
  Loaded b = load(tmp, modelgen::Family::kQwen3_5, 2);  // same geometry, other weights
  Loaded c = load(tmp, modelgen::Family::kMamba2, 1);
  ASSERT_TRUE(a.model && b.model && c.model);
  auto sa = a.model->new_sequence();
  run(*a.model, sa.get(), tokens_of(4, a.model->vocab_size()));
  auto snap = sa->snapshot();
  for (Model* other : {b.model.get(), c.model.get()}) {
    auto s = other->new_sequence();
    Status st = s->restore(*snap);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s->n_tokens(), 0);
  }
  // A sequence of model a cannot be forwarded by model b either.
  ThreadPool pool(1);
  auto toks = tokens_of(2, b.model->vocab_size());
  SeqChunk chunk{.seq = sa.get(), .tokens = toks};
  EXPECT_FALSE(b.model->forward(pool, {&chunk, 1}).is_ok());
}

TEST(Truncate, AttentionOnlyStateTruncatesExactly) {
  TempDir tmp("truncate");
  Loaded l = load(tmp, modelgen::Family::kQwen3);
  ASSERT_TRUE(l.model);
  const auto toks = tokens_of(30, l.model->vocab_size());
  auto ref = l.model->new_sequence();
  run(*l.model, ref.get(), std::span(toks).first(12));
  const auto want = run(*l.model, ref.get(), std::span(toks).subspan(12, 5));
  auto seq = l.model->new_sequence();
  EXPECT_TRUE(seq->truncatable());
  run(*l.model, seq.get(), toks);  // 30 tokens, then back to 12 and a different continuation
  ASSERT_TRUE(seq->truncate(12).is_ok());
  EXPECT_EQ(seq->n_tokens(), 12);
  EXPECT_EQ(static_cast<std::int64_t>(seq->snapshot()->byte_size()),
            l.model->state_layout().snapshot_bytes(12));
  const auto got = run(*l.model, seq.get(), std::span(toks).subspan(12, 5));
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
  EXPECT_FALSE(seq->truncate(18).is_ok());  // beyond n_tokens
}

// A waiting dense conversation takes a shared system prompt's K/V from a live state: the copied
// prefix continues with the bytes of a sequence that computed it, whatever the two capacities
// (the source grew past 256 tokens; the destination held a longer, different prompt before).
TEST(CopyPrefix, ContinuesAsTheSourceWould) {
  TempDir tmp("copy_prefix");
  Loaded l = load(tmp, modelgen::Family::kQwen3);
  ASSERT_TRUE(l.model);
  const auto toks = tokens_of(300, l.model->vocab_size());
  auto ref = l.model->new_sequence();
  run(*l.model, ref.get(), std::span(toks).first(40));
  const auto want = run(*l.model, ref.get(), std::span(toks).subspan(40, 5));
  auto source = l.model->new_sequence();
  for (std::size_t at = 0; at < toks.size(); at += 60) {
    run(*l.model, source.get(), std::span(toks).subspan(at, 60));
  }
  auto dest = l.model->new_sequence();
  run(*l.model, dest.get(), tokens_of(60, l.model->vocab_size() / 2));
  ASSERT_TRUE(dest->copy_prefix_from(*source, 40).is_ok());
  EXPECT_EQ(dest->n_tokens(), 40);
  const auto got = run(*l.model, dest.get(), std::span(toks).subspan(40, 5));
  ASSERT_EQ(want.size(), got.size());
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
  EXPECT_EQ(dest->copy_prefix_from(*source, 301).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(dest->n_tokens(), 45);  // a refused copy leaves the state as it was
}

TEST(CopyPrefix, RefusesRecurrentStatesAndAnotherModel) {
  TempDir tmp("copy_prefix_rec");
  Loaded hybrid = load(tmp, modelgen::Family::kQwen3_5);
  ASSERT_TRUE(hybrid.model);
  auto a = hybrid.model->new_sequence();
  auto b = hybrid.model->new_sequence();
  run(*hybrid.model, a.get(), tokens_of(5, hybrid.model->vocab_size()));
  EXPECT_EQ(b->copy_prefix_from(*a, 3).code(), StatusCode::kFailedPrecondition);
  Loaded dense = load(tmp, modelgen::Family::kQwen3);
  ASSERT_TRUE(dense.model);
  auto c = dense.model->new_sequence();
  EXPECT_EQ(c->copy_prefix_from(*a, 3).code(), StatusCode::kFailedPrecondition);
}

// K/V are head-major with spare capacity per head: growing the capacity moves every head's live
// rows, and a snapshot packs them. A sequence that grows twice while decoding (past 256 and 512
// tokens) gives the bytes of one that reserved room for everything first, and a snapshot of it
// restores into a sequence that continues with the same bytes. Gemma 3's sliding-window rings
// (16-token window, 79 slots) wrap many times on the way, decoded token by token or in chunks.
TEST(KvCache, GrowingKeepsEveryHeadsRows) {
  TempDir tmp("kv_grow");
  for (auto f : {modelgen::Family::kQwen3, modelgen::Family::kQwen3_5, modelgen::Family::kGemma3}) {
    SCOPED_TRACE(modelgen::family_name(f));
    Loaded l = load(tmp, f);
    ASSERT_TRUE(l.model);
    const auto toks = tokens_of(600, l.model->vocab_size());
    auto grown = l.model->new_sequence();
    auto roomy = l.model->new_sequence();
    roomy->reserve_tokens(1024);
    run(*l.model, grown.get(), std::span(toks).first(60));
    for (std::size_t at = 60; at + 1 < toks.size(); ++at) {
      run(*l.model, grown.get(), std::span(toks).subspan(at, 1));
    }
    EXPECT_GE(grown->capacity_tokens(), 600);
    for (std::size_t at = 0; at + 1 < toks.size(); at += 64) {
      run(*l.model, roomy.get(), std::span(toks).subspan(at, std::min<std::size_t>(64, 599 - at)));
    }
    const auto last = std::span(toks).subspan(599, 1);
    auto restored = l.model->new_sequence();
    ASSERT_TRUE(restored->restore(*grown->snapshot()).is_ok());
    const auto want = run(*l.model, roomy.get(), last);
    const auto got = run(*l.model, grown.get(), last);
    const auto again = run(*l.model, restored.get(), last);
    ASSERT_EQ(want.size(), got.size());
    ASSERT_EQ(want.size(), again.size());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(want.data(), again.data(), want.size() * sizeof(float)));
  }
}

TEST(Truncate, RecurrentStatesAndRingsRefuse) {
  TempDir tmp("truncate_rec");
  for (auto f :
       {modelgen::Family::kQwen3_5, modelgen::Family::kMamba2, modelgen::Family::kGemma3}) {
    Loaded l = load(tmp, f);
    ASSERT_TRUE(l.model);
    auto seq = l.model->new_sequence();
    run(*l.model, seq.get(), tokens_of(5, l.model->vocab_size()));
    EXPECT_FALSE(seq->truncatable());
    Status st = seq->truncate(2);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(seq->n_tokens(), 5);
  }
}

TEST(Forward, RejectsBadBatches) {
  TempDir tmp("bad_batch");
  Loaded l = load(tmp, modelgen::Family::kQwen3);
  ASSERT_TRUE(l.model);
  ThreadPool pool(1);
  auto s = l.model->new_sequence();
  std::vector<std::int32_t> bad = {0, static_cast<std::int32_t>(l.model->vocab_size())};
  SeqChunk c{.seq = s.get(), .tokens = bad};
  auto r = l.model->forward(pool, {&c, 1});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("token id"), std::string::npos);
  std::vector<std::int32_t> ok = {1};
  SeqChunk twice[2] = {{.seq = s.get(), .tokens = ok}, {.seq = s.get(), .tokens = ok}};
  EXPECT_FALSE(l.model->forward(pool, twice).is_ok());
  std::vector<std::int32_t> many(65, 1);
  SeqChunk big{.seq = s.get(), .tokens = many};
  EXPECT_EQ(l.model->forward(pool, {&big, 1}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s->n_tokens(), 0);  // nothing changed by failed calls
}

TEST(Forward, DecodeStepsDoNotAllocate) {
  if (!RECUR_COUNT_ALLOCS) GTEST_SKIP() << "allocation counting is off under sanitizers";
  TempDir tmp("noalloc");
  // Every family's tiny preset, and Nemotron-H's MoE blocks (grouped routing, ReLU² experts).
  std::vector<std::pair<modelgen::Family, std::string>> cases;
  for (auto f : kAllFamilies) cases.emplace_back(f, "tiny");
  cases.emplace_back(modelgen::Family::kNemotronH, "tiny-moe");
  for (const auto& [f, preset] : cases) {
    SCOPED_TRACE(std::string(modelgen::family_name(f)) + " " + preset);
    Loaded l = load(tmp, f, 3, modelgen::DType::kBF16, preset);
    ASSERT_TRUE(l.model);
    ThreadPool pool(2);
    auto a = l.model->new_sequence();
    auto b = l.model->new_sequence();
    const auto toks = tokens_of(8, l.model->vocab_size());
    SeqChunk prefill[2] = {{.seq = a.get(), .tokens = toks}, {.seq = b.get(), .tokens = toks}};
    ASSERT_TRUE(l.model->forward(pool, prefill).is_ok());  // KV grows here (block of 256)
    std::int32_t next[2] = {1, 2};
    SeqChunk step[2] = {{.seq = a.get(), .tokens = {&next[0], 1}},
                        {.seq = b.get(), .tokens = {&next[1], 1}}};
    g_allocs = 0;
    g_count_allocs = true;
    for (int i = 0; i < 100; ++i) {
      auto r = l.model->forward(pool, step);
      if (!r.is_ok()) break;
    }
    g_count_allocs = false;
    EXPECT_EQ(g_allocs.load(), 0) << "allocations in 100 decode steps of 2 sequences";
    EXPECT_EQ(a->n_tokens(), 108);
  }
}

}  // namespace
}  // namespace recur::model
