// Long random operation sequences against a trivial reference model (after every step: same
// results, same entries in the same LRU order, same stats, budgets and invariants hold), and the
// same workload from several threads at once against one store.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "cache/store.h"
#include "reference_model.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::ReferenceStore;
using testing::snap;
using testing::tag_of;
using V = std::vector<Token>;

// Keys and token vectors drawn so that prefixes, shared runs, identical vectors and divergences
// are all common: a tiny vocabulary and a pool of earlier vectors to extend or cut.
class Workload {
 public:
  explicit Workload(std::uint64_t seed) : rng_(seed) {}

  CacheKey key() {
    CacheKey k;
    k.tenant.api_key_identity = pick(10) == 0 ? "t2" : "t1";
    k.bucket.model_id = "m";
    k.bucket.template_signature = pick(10) == 0 ? 1 : 0;
    switch (pick(4)) {
      case 0:
        k.session = SessionKey::anonymous();
        break;
      case 1:
        k.session = {SessionKind::kPromptCacheKey, "a"};
        break;
      case 2:
        k.session = {SessionKind::kPromptCacheKey, "b"};
        break;
      default:
        k.session = {SessionKind::kUser, "a"};
    }
    return k;
  }
  Origin origin() {
    return pick(2) == 0 ? Origin::kCompletion : static_cast<Origin>(pick(kNumOrigins));
  }
  // Mostly entries that share the budget with others, sometimes one near or over the budget.
  std::size_t bytes(std::int64_t capacity_bytes) {
    const int top = static_cast<int>(pick(10) == 0 ? capacity_bytes * 6 / 5 : capacity_bytes / 6);
    return static_cast<std::size_t>(1 + pick(top));
  }

  // A prompt: usually something stored before, extended by a new message.
  V prompt() {
    V t = tokens();
    for (int i = pick(4); i > 0; --i) t.push_back(pick(4));
    return t;
  }

  V tokens() {
    V t;
    if (!pool_.empty() && pick(5) != 0) {
      const V& base = pool_[pick(static_cast<int>(pool_.size()))];
      // Half the time the whole vector: a next turn, or an exact replay when nothing is added.
      const int cut =
          pick(2) == 0 ? static_cast<int>(base.size()) : pick(static_cast<int>(base.size()) + 1);
      t.assign(base.begin(), base.begin() + cut);
    }
    const int extra = pick(3) == 0 ? 0 : pick(10);
    for (int i = 0; i < extra && t.size() < 40; ++i) t.push_back(pick(4));
    if (pool_.size() < 32) {
      pool_.push_back(t);
    } else {
      pool_[pick(32)] = t;
    }
    return t;
  }

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::mt19937_64 rng_;
  std::vector<V> pool_;
};

void expect_same_entries(const Store& store, const ReferenceStore& ref) {
  std::vector<EntryView> got = store.list_entries();
  std::vector<ReferenceStore::Item> want = ref.items_by_recency();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].partition == want[i].partition) << "entry " << i;
    EXPECT_TRUE(got[i].session == want[i].session) << "entry " << i;
    EXPECT_EQ(got[i].origin, want[i].origin) << "entry " << i;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "entry " << i;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << "entry " << i;
    EXPECT_EQ(got[i].last_used_ns, want[i].last_used_ns) << "entry " << i;
  }
}

void expect_same_lookup(const LookupResult& got, const ReferenceStore::Found& want) {
  EXPECT_EQ(got.miss, want.result.miss);
  EXPECT_EQ(got.n_tokens_usable, want.result.n_tokens_usable);
  EXPECT_EQ(got.entry_tokens, want.result.entry_tokens);
  EXPECT_EQ(got.diverged_at, want.result.diverged_at);
  ASSERT_EQ(got.hit(), want.tag >= 0);
  if (got.hit()) {
    EXPECT_EQ(got.origin, want.result.origin);
    EXPECT_EQ(tag_of(got.snapshot), want.tag);
  }
}

void expect_same_insert(const InsertResult& got, const InsertResult& want) {
  EXPECT_EQ(got.outcome, want.outcome);
  EXPECT_EQ(got.superseded, want.superseded);
  EXPECT_EQ(got.evicted_lru, want.evicted_lru);
  EXPECT_EQ(got.self_evicted, want.self_evicted);
}

StorePolicy random_policy(Workload& w) {
  StorePolicy p;
  p.capacity_bytes = 100 + 100 * w.pick(10);
  p.max_entries = 1 + w.pick(20);
  p.ttl_ns = w.pick(3) == 0 ? 0 : 20 + w.pick(100);
  p.min_prefix_tokens = w.pick(5);
  p.block_tokens = 1 + w.pick(4);
  p.origin_enabled[static_cast<std::size_t>(Origin::kWarmup)] = w.pick(6) != 0;
  return p;
}

StoreStats run_against_reference(MatchMode mode, std::uint64_t seed, int n_steps) {
  Workload w(seed);
  const StorePolicy policy = random_policy(w);
  ManualClock clock;
  Store store(mode, policy, clock);
  ReferenceStore ref(mode, policy);
  int tag = 0;
  for (int step = 0; step < n_steps; ++step) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " step " << step);
    const int op = w.pick(100);
    if (op < 45) {
      const CacheKey k = w.key();
      const Origin o = w.origin();
      const V t = w.tokens();
      const std::size_t bytes = w.bytes(policy.capacity_bytes);
      ++tag;
      InsertResult got =
          store.insert(k, o, t, snap(bytes, t.size(), mode == MatchMode::kCommonPrefix, tag));
      expect_same_insert(
          got, ref.insert(k, o, t, static_cast<std::int64_t>(bytes), tag, clock.now_ns()));
    } else if (op < 88) {
      const CacheKey k = w.key();
      const V t = w.prompt();
      expect_same_lookup(store.lookup(k, t), ref.lookup(k, t, clock.now_ns()));
    } else if (op < 96) {
      clock.advance_ns(w.pick(static_cast<int>(policy.ttl_ns / 2) + 3));
    } else if (op < 99) {
      EXPECT_EQ(store.sweep(), ref.sweep(clock.now_ns()));
    } else {
      ClearResult got = store.clear();
      ClearResult want = ref.clear();
      EXPECT_EQ(got.freed_entries, want.freed_entries);
      EXPECT_EQ(got.freed_bytes, want.freed_bytes);
    }
    store.check_invariants();  // budgets, totals, tree shape
    EXPECT_EQ(store.stats(), ref.stats());
    expect_same_entries(store, ref);
    if (::testing::Test::HasFailure()) break;
  }
  return store.stats();
}

class RandomizedTest : public ::testing::TestWithParam<MatchMode> {};

TEST_P(RandomizedTest, MatchesTheReferenceModelAfterEveryStep) {
  const MatchMode mode = GetParam();
  StoreStats sum;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const StoreStats s = run_against_reference(mode, seed, 3000);
    if (HasFailure()) return;
    for (auto field :
         {&StoreStats::hits, &StoreStats::supersedes, &StoreStats::replaces,
          &StoreStats::evictions_lru, &StoreStats::evictions_ttl, &StoreStats::self_evictions,
          &StoreStats::rejections_oversized, &StoreStats::rejections_too_short,
          &StoreStats::rejections_disabled, &StoreStats::misses_no_candidate,
          &StoreStats::misses_diverged, &StoreStats::misses_different_session,
          &StoreStats::misses_too_short, &StoreStats::misses_whole_prompt}) {
      sum.*field += s.*field;
    }
  }
  // The sequences reach every rule the store has, so agreement above means something.
  EXPECT_GT(sum.hits, 300);
  EXPECT_GT(sum.supersedes, 100);
  EXPECT_GT(sum.replaces, 10);
  EXPECT_GT(sum.evictions_lru, 100);
  EXPECT_GT(sum.evictions_ttl, 100);
  EXPECT_GT(sum.self_evictions, 10);
  EXPECT_GT(sum.rejections_oversized, 10);
  EXPECT_GT(sum.rejections_too_short, 10);
  EXPECT_GT(sum.rejections_disabled, 10);
  EXPECT_GT(sum.misses_no_candidate, 100);
  EXPECT_GT(sum.misses_diverged, 100);
  if (mode == MatchMode::kExactPrefix) {
    EXPECT_GT(sum.misses_different_session, 100);
    EXPECT_GT(sum.misses_whole_prompt, 10);
  } else {
    EXPECT_GT(sum.misses_too_short, 10);
  }
  std::printf(
      "hits %ld supersedes %ld lru %ld ttl %ld self %ld diverged %ld other-session %ld "
      "too-short %ld whole %ld\n",
      static_cast<long>(sum.hits), static_cast<long>(sum.supersedes),
      static_cast<long>(sum.evictions_lru), static_cast<long>(sum.evictions_ttl),
      static_cast<long>(sum.self_evictions), static_cast<long>(sum.misses_diverged),
      static_cast<long>(sum.misses_different_session), static_cast<long>(sum.misses_too_short),
      static_cast<long>(sum.misses_whole_prompt));
}

INSTANTIATE_TEST_SUITE_P(BothStores, RandomizedTest,
                         ::testing::Values(MatchMode::kExactPrefix, MatchMode::kCommonPrefix),
                         [](const auto& param_info) {
                           return param_info.param == MatchMode::kExactPrefix
                                      ? std::string("snapshot_store")
                                      : std::string("prefix_store");
                         });

// Time that several threads may read and advance.
class SharedClock final : public Clock {
 public:
  Nanos now_ns() const override { return now_.load(std::memory_order_relaxed); }
  void advance_ns(Nanos d) { now_.fetch_add(d, std::memory_order_relaxed); }

 private:
  std::atomic<Nanos> now_{0};
};

// A snapshot with a payload, so that a reader copying it out races with eviction if the store
// ever let go of it too early (the thread sanitizer build would see it).
class PayloadSnapshot final : public Snapshot {
 public:
  PayloadSnapshot(std::size_t n_bytes, std::int64_t n_tokens, std::uint8_t fill)
      : payload_(n_bytes, fill), n_tokens_(n_tokens) {}
  std::size_t byte_size() const override { return payload_.size(); }
  std::int64_t n_tokens() const override { return n_tokens_; }
  bool truncatable() const override { return false; }
  const std::vector<std::uint8_t>& payload() const { return payload_; }

 private:
  std::vector<std::uint8_t> payload_;
  std::int64_t n_tokens_;
};

struct Tally {
  std::int64_t lookups = 0, hits = 0, inserts = 0, replaces = 0, supersedes = 0, lru = 0, self = 0,
               rejections = 0;
};

void stress_worker(Store& store, SharedClock& clock, std::uint64_t seed, int n_steps,
                   Tally& tally) {
  Workload w(seed);
  for (int step = 0; step < n_steps; ++step) {
    const int op = w.pick(100);
    const CacheKey k = w.key();
    const V t = w.tokens();
    if (op < 50) {
      const auto fill = static_cast<std::uint8_t>(t.size());
      auto s = std::make_shared<PayloadSnapshot>(1 + static_cast<std::size_t>(w.pick(300)),
                                                 static_cast<std::int64_t>(t.size()), fill);
      InsertResult r = store.insert(k, w.origin(), t, std::move(s));
      tally.inserts += r.admitted();
      tally.replaces += r.outcome == InsertOutcome::kReplaced;
      tally.rejections += !r.admitted();
      tally.supersedes += r.superseded;
      tally.lru += r.evicted_lru;
      tally.self += r.self_evicted;
    } else if (op < 97) {
      LookupResult r = store.lookup(k, t);
      ++tally.lookups;
      if (r.hit()) {
        ++tally.hits;
        // Copy out with no lock held, as the engine's restore does.
        const auto& payload = static_cast<const PayloadSnapshot&>(*r.snapshot).payload();
        std::vector<std::uint8_t> copy(payload.begin(), payload.end());
        ASSERT_TRUE(std::all_of(copy.begin(), copy.end(), [&](std::uint8_t b) {
          return b == static_cast<std::uint8_t>(r.entry_tokens);
        }));
      }
    } else if (op < 99) {
      clock.advance_ns(1 + w.pick(5));
    } else if (w.pick(20) != 0) {
      store.sweep();
    } else {
      store.clear();
    }
  }
}

class StressTest : public ::testing::TestWithParam<MatchMode> {};

TEST_P(StressTest, ConcurrentLookupsAndInsertsKeepBudgetsAndStatsConsistent) {
  SharedClock clock;
  const StorePolicy policy{
      .capacity_bytes = 2000, .max_entries = 24, .ttl_ns = 40, .min_prefix_tokens = 1};
  Store store(GetParam(), policy, clock);
  constexpr int kThreads = 4;
  constexpr int kSteps = 20000;
  std::vector<Tally> tallies(kThreads);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      StoreStats s = store.stats();
      // Consistent at any instant: every counter was read under the same lock.
      ASSERT_LE(s.entries, policy.max_entries);
      ASSERT_LE(s.bytes, policy.capacity_bytes);
      ASSERT_EQ(s.lookups, s.hits + s.misses_no_candidate + s.misses_different_session +
                               s.misses_diverged + s.misses_too_short + s.misses_whole_prompt);
      ASSERT_EQ(s.entries, s.inserts - s.replaces - s.supersedes - s.evictions_lru -
                               s.self_evictions - s.evictions_ttl - s.cleared_entries);
    }
  });
  std::vector<std::thread> workers;
  for (int i = 0; i < kThreads; ++i) {
    workers.emplace_back(stress_worker, std::ref(store), std::ref(clock), 100 + i, kSteps,
                         std::ref(tallies[static_cast<std::size_t>(i)]));
  }
  for (auto& t : workers) t.join();
  done = true;
  reader.join();

  Tally sum;
  for (const Tally& t : tallies) {
    sum.lookups += t.lookups;
    sum.hits += t.hits;
    sum.inserts += t.inserts;
    sum.replaces += t.replaces;
    sum.supersedes += t.supersedes;
    sum.lru += t.lru;
    sum.self += t.self;
    sum.rejections += t.rejections;
  }
  store.check_invariants();
  StoreStats s = store.stats();
  EXPECT_EQ(s.lookups, sum.lookups);
  EXPECT_EQ(s.hits, sum.hits);
  EXPECT_GT(s.hits, 0);
  EXPECT_EQ(s.inserts, sum.inserts);
  EXPECT_EQ(s.replaces, sum.replaces);
  EXPECT_EQ(s.supersedes, sum.supersedes);
  EXPECT_EQ(s.evictions_lru, sum.lru);
  EXPECT_EQ(s.self_evictions, sum.self);
  EXPECT_EQ(s.rejections_too_short + s.rejections_oversized + s.rejections_disabled,
            sum.rejections);
  EXPECT_EQ(s.entries, s.inserts - s.replaces - s.supersedes - s.evictions_lru - s.self_evictions -
                           s.evictions_ttl - s.cleared_entries);
  EXPECT_GT(s.cleared_entries, 0);
}

INSTANTIATE_TEST_SUITE_P(BothStores, StressTest,
                         ::testing::Values(MatchMode::kExactPrefix, MatchMode::kCommonPrefix),
                         [](const auto& param_info) {
                           return param_info.param == MatchMode::kExactPrefix
                                      ? std::string("snapshot_store")
                                      : std::string("prefix_store");
                         });

}  // namespace
}  // namespace recur::cache
