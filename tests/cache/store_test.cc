// Snapshot-store rules (exact prefixes per session): keys and isolation, lookup and its cap,
// miss reasons, rejections, replace, LRU, byte budget, TTL, stats and clear.
#include "cache/store.h"

#include <gtest/gtest.h>

#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::concat;
using testing::iota_tokens;
using testing::key_for;
using testing::snap;
using testing::tag_of;
using V = std::vector<Token>;

constexpr Nanos kSecond = 1'000'000'000;

StorePolicy policy(std::int64_t capacity_bytes = 1'000'000, std::int64_t max_entries = 100,
                   Nanos ttl_ns = 0, std::int64_t min_prefix = 4) {
  return {.enabled = true,
          .capacity_bytes = capacity_bytes,
          .max_entries = max_entries,
          .ttl_ns = ttl_ns,
          .min_prefix_tokens = min_prefix};
}

class SnapshotStoreTest : public ::testing::Test {
 protected:
  InsertResult put(const CacheKey& k, const V& t, std::size_t bytes = 100, int tag = 0,
                   Origin origin = Origin::kCompletion) {
    return store_->insert(k, origin, t, snap(bytes, t.size(), false, tag));
  }
  void make(const StorePolicy& p) {
    store_ = std::make_unique<Store>(MatchMode::kExactPrefix, p, clock_);
  }
  ManualClock clock_;
  std::unique_ptr<Store> store_ =
      std::make_unique<Store>(MatchMode::kExactPrefix, policy(), clock_);
};

TEST_F(SnapshotStoreTest, HitReturnsLongestStoredPrefixOfSameSession) {
  const V prompt = iota_tokens(100);
  put(key_for("s"), V(prompt.begin(), prompt.begin() + 20), 100, 1, Origin::kBoundary);
  put(key_for("s"), V(prompt.begin(), prompt.begin() + 60), 100, 2, Origin::kCompletion);
  put(key_for("s"), V(prompt.begin(), prompt.begin() + 40), 100, 3, Origin::kWarmup);
  LookupResult r = store_->lookup(key_for("s"), prompt);
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.n_tokens_usable, 60);
  EXPECT_EQ(r.entry_tokens, 60);
  EXPECT_EQ(r.origin, Origin::kCompletion);
  EXPECT_EQ(tag_of(r.snapshot), 2);
  // Non-consuming: the same entry again.
  LookupResult again = store_->lookup(key_for("s"), prompt);
  EXPECT_EQ(again.snapshot, r.snapshot);
  EXPECT_EQ(store_->stats().entries, 3);
}

TEST_F(SnapshotStoreTest, AtLeastOnePromptTokenIsLeftToCompute) {
  const V prompt = iota_tokens(60);
  put(key_for("s"), prompt, 100, 1, Origin::kCompletion);
  LookupResult r = store_->lookup(key_for("s"), prompt);
  EXPECT_FALSE(r.hit());
  EXPECT_EQ(r.miss, MissReason::kWholePrompt);
  EXPECT_EQ(r.entry_tokens, 60);
  put(key_for("s"), V(prompt.begin(), prompt.begin() + 59), 100, 2, Origin::kBoundary);
  r = store_->lookup(key_for("s"), prompt);
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.n_tokens_usable, 59);
  EXPECT_EQ(tag_of(r.snapshot), 2);
}

TEST_F(SnapshotStoreTest, SessionsTenantsAndBucketsNeverMeet) {
  const V stored = iota_tokens(30);
  const V prompt = iota_tokens(50);
  put(key_for("a"), stored);
  LookupResult r = store_->lookup(key_for("b"), prompt);
  EXPECT_EQ(r.miss, MissReason::kDifferentSession);
  EXPECT_EQ(r.entry_tokens, 30);
  EXPECT_EQ(store_->lookup(key_for(""), prompt).miss, MissReason::kDifferentSession);

  CacheKey user_a = key_for("a");
  user_a.session = SessionKey::from_request("", "a");  // user "a" is not prompt_cache_key "a"
  EXPECT_EQ(user_a.session.kind, SessionKind::kUser);
  EXPECT_EQ(store_->lookup(user_a, prompt).miss, MissReason::kDifferentSession);

  EXPECT_EQ(store_->lookup(key_for("a", "other-tenant"), prompt).miss, MissReason::kNoCandidate);
  EXPECT_EQ(store_->lookup(key_for("a", "t1", "other-model"), prompt).miss,
            MissReason::kNoCandidate);
  CacheKey salted = key_for("a");
  salted.tenant.cache_salt = "salt";
  EXPECT_EQ(store_->lookup(salted, prompt).miss, MissReason::kNoCandidate);
  for (auto change : {+[](BucketKey& b) { b.adapter_id = "lora"; },
                      +[](BucketKey& b) { b.template_signature = 7; },
                      +[](BucketKey& b) { b.multimodal_digest = 9; }}) {
    CacheKey k = key_for("a");
    change(k.bucket);
    EXPECT_EQ(store_->lookup(k, prompt).miss, MissReason::kNoCandidate);
  }
  EXPECT_TRUE(store_->lookup(key_for("a"), prompt).hit());
}

// The tenant's shared session (a system prompt's state) serves every session of the same tenant
// and bucket, never another tenant's; a session's own longer entry wins over it.
TEST_F(SnapshotStoreTest, SharedPrefixServesTheTenantsOtherSessions) {
  const V system = iota_tokens(30);
  CacheKey shared = key_for("a");
  shared.session = SessionKey::shared();
  put(shared, system, 100, 1, Origin::kShared);
  const V prompt_b = concat(system, V{900, 901, 902});
  LookupResult r = store_->lookup(key_for("b"), prompt_b);
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.n_tokens_usable, 30);
  EXPECT_EQ(r.origin, Origin::kShared);
  EXPECT_EQ(tag_of(r.snapshot), 1);
  EXPECT_FALSE(store_->lookup(key_for("b", "t2"), prompt_b).hit()) << "another tenant";
  EXPECT_FALSE(store_->lookup(key_for("b", "t1", "m2"), prompt_b).hit()) << "another bucket";
  // Session b's own boundary, longer than the shared prefix, wins.
  const V own = concat(system, V{900, 901});
  put(key_for("b"), own, 100, 2, Origin::kBoundary);
  LookupResult longer = store_->lookup(key_for("b"), concat(own, V{5, 6}));
  ASSERT_TRUE(longer.hit());
  EXPECT_EQ(longer.n_tokens_usable, 32);
  EXPECT_EQ(tag_of(longer.snapshot), 2);
  // A prompt that leaves the system prompt early finds nothing.
  V diverged = system;
  diverged[10] = 7777;
  EXPECT_FALSE(store_->lookup(key_for("c"), concat(diverged, V{1})).hit());
  const StoreStats st = store_->stats();
  EXPECT_EQ(st.hits, 2);
  EXPECT_EQ(st.hits_shared, 1);
}

TEST_F(SnapshotStoreTest, SessionResolutionPrefersPromptCacheKeyThenUser) {
  EXPECT_EQ(SessionKey::from_request("k", "u"), (SessionKey{SessionKind::kPromptCacheKey, "k"}));
  EXPECT_EQ(SessionKey::from_request("", "u"), (SessionKey{SessionKind::kUser, "u"}));
  EXPECT_EQ(SessionKey::from_request("", ""), SessionKey::anonymous());
}

TEST_F(SnapshotStoreTest, MissNamesWhereTheSessionsLatestEntryDiverged) {
  V stored = iota_tokens(50);
  put(key_for("s"), stored);
  V prompt = stored;
  prompt[30] = 999;
  prompt.push_back(1000);
  LookupResult r = store_->lookup(key_for("s"), prompt);
  EXPECT_EQ(r.miss, MissReason::kDiverged);
  EXPECT_EQ(r.diverged_at, 30);
  EXPECT_EQ(r.entry_tokens, 50);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.misses_diverged, 1);
  EXPECT_EQ(s.last_miss, MissReason::kDiverged);
  EXPECT_EQ(s.last_miss_diverged_at, 30);
  EXPECT_EQ(s.last_miss_entry_tokens, 50);
  // A prompt shorter than the entry: the entry cannot be cut, so it covers the whole prompt.
  EXPECT_EQ(store_->lookup(key_for("s"), iota_tokens(20)).miss, MissReason::kWholePrompt);
  EXPECT_EQ(store_->lookup(key_for("s2"), prompt).miss, MissReason::kNoCandidate);
}

TEST_F(SnapshotStoreTest, RejectsOversizedTooShortAndDisabled) {
  make(policy(/*capacity_bytes=*/1000, 100, 0, /*min_prefix=*/8));
  InsertResult r = put(key_for("s"), iota_tokens(7));
  EXPECT_EQ(r.outcome, InsertOutcome::kRejectedTooShort);
  r = put(key_for("s"), iota_tokens(8), 1001);
  EXPECT_EQ(r.outcome, InsertOutcome::kRejectedOversized);
  r = put(key_for("s"), iota_tokens(8), 1000);  // exactly the budget fits
  EXPECT_EQ(r.outcome, InsertOutcome::kInserted);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.rejections_too_short, 1);
  EXPECT_EQ(s.rejections_oversized, 1);
  EXPECT_EQ(s.inserts, 1);
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.last_reject, InsertOutcome::kRejectedOversized);
  EXPECT_EQ(s.last_reject_bytes, 1001);
  EXPECT_EQ(s.last_reject_tokens, 8);
  EXPECT_EQ(store_->lookup(key_for("s"), iota_tokens(9)).n_tokens_usable, 8);

  StorePolicy off = policy();
  off.enabled = false;
  make(off);
  EXPECT_EQ(put(key_for("s"), iota_tokens(8)).outcome, InsertOutcome::kRejectedDisabled);
  EXPECT_EQ(store_->lookup(key_for("s"), iota_tokens(9)).miss, MissReason::kDisabled);
  s = store_->stats();
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.rejections_disabled, 1);
  EXPECT_EQ(s.misses_disabled, 1);

  StorePolicy no_boundary = policy();
  no_boundary.origin_enabled[static_cast<std::size_t>(Origin::kBoundary)] = false;
  make(no_boundary);
  EXPECT_EQ(put(key_for("s"), iota_tokens(8), 1, 0, Origin::kBoundary).outcome,
            InsertOutcome::kRejectedDisabled);
  EXPECT_EQ(put(key_for("s"), iota_tokens(8), 1, 0, Origin::kWarmup).outcome,
            InsertOutcome::kInserted);
}

TEST_F(SnapshotStoreTest, ReplacingTheSameKeyIsIdempotent) {
  const V t = iota_tokens(20);
  put(key_for("s"), t, 100, 1);
  InsertResult r = put(key_for("s"), t, 300, 2);
  EXPECT_EQ(r.outcome, InsertOutcome::kReplaced);
  EXPECT_EQ(r.superseded, 0);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.bytes, 300);
  EXPECT_EQ(s.inserts, 2);
  EXPECT_EQ(s.replaces, 1);
  EXPECT_EQ(s.supersedes, 0);
  EXPECT_EQ(tag_of(store_->lookup(key_for("s"), iota_tokens(30)).snapshot), 2);
}

TEST_F(SnapshotStoreTest, LruOrderFollowsUse) {
  make(policy(1'000'000, /*max_entries=*/3));
  // Different sessions, so nothing supersedes anything.
  put(key_for("a"), iota_tokens(10, 100));
  put(key_for("b"), iota_tokens(10, 200));
  put(key_for("c"), iota_tokens(10, 300));
  clock_.advance_ns(5);
  ASSERT_TRUE(store_->lookup(key_for("a"), iota_tokens(11, 100)).hit());  // a is now the newest
  InsertResult r = put(key_for("d"), iota_tokens(10, 400));
  EXPECT_EQ(r.evicted_lru, 1);
  EXPECT_EQ(r.self_evicted, 0);
  std::vector<EntryView> left = store_->list_entries();
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[0].session.id, "d");
  EXPECT_EQ(left[1].session.id, "a");
  EXPECT_EQ(left[1].last_used_ns, 5);
  EXPECT_EQ(left[2].session.id, "c");  // b was least recently used
  EXPECT_EQ(store_->lookup(key_for("b"), iota_tokens(11, 200)).miss, MissReason::kNoCandidate);
  EXPECT_EQ(store_->stats().evictions_lru, 1);
}

TEST_F(SnapshotStoreTest, ByteBudgetEvictsUntilItHolds) {
  make(policy(/*capacity_bytes=*/1000));
  put(key_for("a"), iota_tokens(10, 100), 400);
  put(key_for("b"), iota_tokens(10, 200), 400);
  InsertResult r = put(key_for("c"), iota_tokens(10, 300), 900);
  EXPECT_EQ(r.evicted_lru, 2);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.bytes, 900);
  EXPECT_EQ(s.bytes_per_entry, 900);
  EXPECT_EQ(s.capacity_bytes, 1000);
  store_->check_invariants();
}

TEST_F(SnapshotStoreTest, EvictingTheAdmittedConversationIsCountedApart) {
  make(policy(/*capacity_bytes=*/1000));
  const V history = iota_tokens(40);
  const V completion = concat(history, iota_tokens(20, 500));
  put(key_for("other"), iota_tokens(10, 900), 100);
  put(key_for("s"), history, 600, 1, Origin::kBoundary);
  clock_.advance_ns(1);
  store_->lookup(key_for("other"), iota_tokens(11, 900));  // the boundary is now the LRU
  InsertResult r = put(key_for("s"), completion, 700, 2, Origin::kCompletion);
  EXPECT_EQ(r.self_evicted, 1);
  EXPECT_EQ(r.evicted_lru, 0);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.self_evictions, 1);
  EXPECT_EQ(s.evictions_lru, 0);
  EXPECT_EQ(s.entries, 2);
}

TEST_F(SnapshotStoreTest, IdleEntriesExpireOnTouchAndOnSweep) {
  make(policy(1'000'000, 100, /*ttl_ns=*/10 * kSecond));
  put(key_for("s"), iota_tokens(10));
  clock_.advance_ns(9 * kSecond);
  EXPECT_TRUE(store_->lookup(key_for("s"), iota_tokens(11)).hit());  // refreshes the idle time
  clock_.advance_ns(9 * kSecond);
  EXPECT_TRUE(store_->lookup(key_for("s"), iota_tokens(11)).hit());
  clock_.advance_ns(10 * kSecond);
  LookupResult r = store_->lookup(key_for("s"), iota_tokens(11));
  EXPECT_EQ(r.miss, MissReason::kNoCandidate);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.evictions_ttl, 1);
  EXPECT_EQ(s.entries, 0);

  put(key_for("s"), iota_tokens(10));
  put(key_for("t"), iota_tokens(10));
  clock_.advance_ns(5 * kSecond);
  put(key_for("u"), iota_tokens(10));
  clock_.advance_ns(5 * kSecond);
  EXPECT_EQ(store_->stats().entries, 3);  // nothing is touched yet
  EXPECT_EQ(store_->sweep(), 2);
  EXPECT_EQ(store_->stats().entries, 1);
  EXPECT_EQ(store_->stats().evictions_ttl, 3);
}

TEST_F(SnapshotStoreTest, StatsAddUpAndClearReportsWhatItFreed) {
  put(key_for("a"), iota_tokens(10), 100);
  put(key_for("b"), iota_tokens(20), 300);
  store_->lookup(key_for("a"), iota_tokens(15));        // hit, 10 tokens
  store_->lookup(key_for("b"), iota_tokens(25));        // hit, 20 tokens
  store_->lookup(key_for("c"), iota_tokens(25));        // different session
  store_->lookup(key_for("a", "t2"), iota_tokens(25));  // no candidate
  StoreStats s = store_->stats();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.lookups, 4);
  EXPECT_EQ(s.hits, 2);
  EXPECT_DOUBLE_EQ(s.hit_rate, 0.5);
  EXPECT_EQ(s.tokens_reused, 30);
  EXPECT_EQ(s.misses_different_session, 1);
  EXPECT_EQ(s.misses_no_candidate, 1);
  EXPECT_EQ(s.bytes_per_entry, 200);
  EXPECT_EQ(s.max_entries, 100);
  ClearResult c = store_->clear();
  EXPECT_EQ(c.freed_entries, 2);
  EXPECT_EQ(c.freed_bytes, 400);
  s = store_->stats();
  EXPECT_EQ(s.entries, 0);
  EXPECT_EQ(s.bytes, 0);
  EXPECT_EQ(s.lookups, 4);  // counters survive a clear
  store_->check_invariants();
}

TEST_F(SnapshotStoreTest, BorrowedSnapshotOutlivesItsEviction) {
  put(key_for("s"), iota_tokens(10), 100, 42);
  LookupResult r = store_->lookup(key_for("s"), iota_tokens(11));
  store_->clear();
  ASSERT_TRUE(r.snapshot != nullptr);
  EXPECT_EQ(tag_of(r.snapshot), 42);
  EXPECT_EQ(r.snapshot.use_count(), 1);  // the store let go; the borrower still holds it
}

}  // namespace
}  // namespace recur::cache

namespace recur::cache {
namespace {

TEST(StoreRetire, RemovesExactlyTheNamedEntry) {
  ManualClock clock;
  Store store(
      MatchMode::kExactPrefix,
      {.enabled = true, .capacity_bytes = 1'000'000, .max_entries = 100, .min_prefix_tokens = 4},
      clock);
  const std::vector<Token> t = testing::iota_tokens(40);
  const std::vector<Token> shorter(t.begin(), t.begin() + 20);
  store.insert(testing::key_for("s"), Origin::kCompletion, t, testing::snap(100, 40, false, 1));
  store.insert(testing::key_for("s"), Origin::kWarmup, t, testing::snap(100, 40, false, 2));
  // Other session, other origin, other length: nothing to retire.
  EXPECT_FALSE(store.retire(testing::key_for("other"), Origin::kCompletion, t));
  EXPECT_FALSE(store.retire(testing::key_for("s"), Origin::kBoundary, t));
  EXPECT_FALSE(store.retire(testing::key_for("s"), Origin::kCompletion, shorter));
  EXPECT_EQ(store.stats().entries, 2);
  EXPECT_TRUE(store.retire(testing::key_for("s"), Origin::kCompletion, t));
  EXPECT_FALSE(store.retire(testing::key_for("s"), Origin::kCompletion, t));
  StoreStats s = store.stats();
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.bytes, 100);
  EXPECT_EQ(s.supersedes, 1);
  EXPECT_EQ(s.evictions_lru, 0);
  auto left = store.list_entries();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].origin, Origin::kWarmup);
  store.check_invariants();
}

}  // namespace
}  // namespace recur::cache
