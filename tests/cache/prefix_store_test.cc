// Prefix-store lookups (truncatable KV): longest common prefix at block granularity, shared
// across sessions of a tenant + bucket, partial matches and their miss reasons.
#include <gtest/gtest.h>

#include "cache/store.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::concat;
using testing::iota_tokens;
using testing::key_for;
using testing::snap;
using testing::tag_of;
using V = std::vector<Token>;

class PrefixStoreTest : public ::testing::Test {
 protected:
  void make(std::int64_t block_tokens, std::int64_t min_prefix = 16) {
    store_ = std::make_unique<Store>(MatchMode::kCommonPrefix,
                                     StorePolicy{.capacity_bytes = 1'000'000,
                                                 .max_entries = 100,
                                                 .min_prefix_tokens = min_prefix,
                                                 .block_tokens = block_tokens},
                                     clock_);
  }
  void put(const CacheKey& k, const V& t, int tag = 0) {
    ASSERT_TRUE(
        store_->insert(k, Origin::kCompletion, t, snap(100, t.size(), true, tag)).admitted());
  }
  V diverging_at(const V& t, std::size_t at, std::size_t extra = 20) {
    V out(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(at));
    return concat(out, iota_tokens(extra, -1000));
  }
  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(PrefixStoreTest, PartialMatchIsRoundedDownToBlocks) {
  make(16);
  const V stored = iota_tokens(100);
  put(key_for("a"), stored, 1);
  LookupResult r = store_->lookup(key_for("a"), diverging_at(stored, 70));
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.n_tokens_usable, 64);
  EXPECT_EQ(r.entry_tokens, 100);
  EXPECT_EQ(tag_of(r.snapshot), 1);
  make(1);
  put(key_for("a"), stored);
  EXPECT_EQ(store_->lookup(key_for("a"), diverging_at(stored, 70)).n_tokens_usable, 70);
  EXPECT_EQ(store_->stats().tokens_reused, 70);
}

TEST_F(PrefixStoreTest, SharedAcrossSessionsNotAcrossTenantsOrBuckets) {
  make(1);
  const V stored = iota_tokens(50);
  put(key_for("a"), stored);
  const V prompt = concat(stored, {1, 2, 3});
  EXPECT_EQ(store_->lookup(key_for("b"), prompt).n_tokens_usable, 50);
  EXPECT_EQ(store_->lookup(key_for(""), prompt).n_tokens_usable, 50);
  EXPECT_EQ(store_->lookup(key_for("a", "t2"), prompt).miss, MissReason::kNoCandidate);
  EXPECT_EQ(store_->lookup(key_for("a", "t1", "m2"), prompt).miss, MissReason::kNoCandidate);
}

TEST_F(PrefixStoreTest, PromptInsideAnEntryLeavesOneTokenToCompute) {
  make(1);
  const V stored = iota_tokens(100);
  put(key_for("a"), stored);
  LookupResult r = store_->lookup(key_for("a"), V(stored.begin(), stored.begin() + 50));
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.n_tokens_usable, 49);
  EXPECT_EQ(store_->lookup(key_for("a"), stored).n_tokens_usable, 99);
  make(16);
  put(key_for("a"), stored);
  EXPECT_EQ(store_->lookup(key_for("a"), V(stored.begin(), stored.begin() + 48)).n_tokens_usable,
            32);
}

TEST_F(PrefixStoreTest, ShortMatchesMissWithTheirReason) {
  make(1, /*min_prefix=*/16);
  const V stored = iota_tokens(100);
  put(key_for("a"), stored);
  LookupResult r = store_->lookup(key_for("a"), diverging_at(stored, 10));
  EXPECT_EQ(r.miss, MissReason::kDiverged);
  EXPECT_EQ(r.diverged_at, 10);
  EXPECT_EQ(r.entry_tokens, 100);
  r = store_->lookup(key_for("a"), V(stored.begin(), stored.begin() + 12));  // the prompt is short
  EXPECT_EQ(r.miss, MissReason::kTooShort);
  EXPECT_EQ(r.diverged_at, 12);
  EXPECT_EQ(store_->lookup(key_for("a"), iota_tokens(50, 5000)).miss, MissReason::kNoCandidate);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.lookups, 3);
  EXPECT_EQ(s.misses_diverged + s.misses_too_short + s.misses_no_candidate, 3);
}

TEST_F(PrefixStoreTest, PicksTheLongestCommonPrefixThenShortestThenMostRecent) {
  make(1, 1);
  const V base = iota_tokens(40);
  put(key_for("a"), concat(base, iota_tokens(30, 100)), 1);  // shares 40 with the prompt
  put(key_for("a"), V(base.begin(), base.begin() + 30), 2);  // shares 30
  const V prompt = concat(base, iota_tokens(10, 900));
  LookupResult r = store_->lookup(key_for("b"), prompt);
  EXPECT_EQ(tag_of(r.snapshot), 1);
  EXPECT_EQ(r.n_tokens_usable, 40);
  // Another entry sharing 40: the lexicographically first wins, a deterministic rule.
  put(key_for("c"), concat(base, iota_tokens(5, 50)), 3);
  EXPECT_EQ(tag_of(store_->lookup(key_for("b"), prompt).snapshot), 3);
  // Identical vectors in two sessions: the most recently used wins.
  put(key_for("d"), concat(base, iota_tokens(5, 50)), 4);
  EXPECT_EQ(tag_of(store_->lookup(key_for("b"), prompt).snapshot), 4);
  // A prefix of both comes first of all (and is the least to copy).
  put(key_for("e"), concat(base, {50}), 5);
  EXPECT_EQ(tag_of(store_->lookup(key_for("b"), prompt).snapshot), 5);
  store_->check_invariants();
}

}  // namespace
}  // namespace recur::cache
