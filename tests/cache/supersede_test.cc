// Supersede: a conversation keeps one chain per origin; nothing else is ever superseded; and
// the ancestor's bytes are freed before the newcomer is counted.
#include <gtest/gtest.h>

#include "cache/store.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::concat;
using testing::iota_tokens;
using testing::key_for;
using testing::snap;
using V = std::vector<Token>;

class SupersedeTest : public ::testing::TestWithParam<std::string> {
 protected:
  SupersedeTest() { make(1'000'000); }
  void make(std::int64_t capacity_bytes) {
    store_ = std::make_unique<Store>(
        MatchMode::kExactPrefix,
        StorePolicy{.capacity_bytes = capacity_bytes, .max_entries = 1000, .min_prefix_tokens = 1},
        clock_);
  }
  InsertResult put(const CacheKey& k, const V& t, Origin origin = Origin::kCompletion,
                   std::size_t bytes = 100) {
    return store_->insert(k, origin, t, snap(bytes, t.size()));
  }
  CacheKey key() const { return key_for(GetParam()); }  // "" is the anonymous session
  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_P(SupersedeTest, ChainOfTurnsCollapsesToOneEntryPerOrigin) {
  V conversation = iota_tokens(30);  // system prompt + first user message
  const int kTurns = 8;
  for (int turn = 0; turn < kTurns; ++turn) {
    const V history = conversation;
    put(key(), history, Origin::kBoundary);
    conversation =
        concat(conversation, iota_tokens(25, 1000 * (turn + 1)));  // generation prompt + reply
    put(key(), conversation, Origin::kCompletion);
    conversation = concat(conversation, iota_tokens(15, 1000 * (turn + 1) + 500));  // user message
    put(key(), conversation, Origin::kWarmup);
    // The next turn reuses the warm-up snapshot.
    LookupResult r = store_->lookup(key(), concat(conversation, {7, 7}));
    ASSERT_TRUE(r.hit());
    EXPECT_EQ(r.origin, Origin::kWarmup);
  }
  StoreStats s = store_->stats();
  EXPECT_EQ(s.entries, 3);
  EXPECT_EQ(s.supersedes, 3 * (kTurns - 1));
  EXPECT_EQ(s.evictions_lru, 0);
  EXPECT_EQ(s.self_evictions, 0);
  EXPECT_EQ(s.inserts, 3 * kTurns);
  for (const EntryView& e : store_->list_entries()) EXPECT_EQ(e.session, key().session);
}

TEST_P(SupersedeTest, ExactReplayReplacesAndEditedTurnStartsANewChain) {
  const V turn1 = iota_tokens(40);
  put(key(), turn1);
  EXPECT_EQ(put(key(), turn1).outcome, InsertOutcome::kReplaced);
  V edited = turn1;
  edited[35] = -5;  // an edited last message: not an extension
  edited.push_back(1);
  EXPECT_EQ(put(key(), edited).superseded, 0);
  EXPECT_EQ(store_->stats().entries, 2);
  EXPECT_EQ(store_->stats().supersedes, 0);
}

TEST_P(SupersedeTest, NeverAcrossSessionsBucketsTenantsOrOrigins) {
  const V base = iota_tokens(20);
  const V longer = concat(base, iota_tokens(10, 500));
  put(key(), base);
  CacheKey other_session = key();
  other_session.session = {SessionKind::kUser, "someone-else"};
  CacheKey other_bucket = key();
  other_bucket.bucket.template_signature = 99;
  CacheKey other_tenant = key();
  other_tenant.tenant.cache_salt = "x";
  EXPECT_EQ(put(other_session, longer).superseded, 0);
  EXPECT_EQ(put(other_bucket, longer).superseded, 0);
  EXPECT_EQ(put(other_tenant, longer).superseded, 0);
  EXPECT_EQ(put(key(), longer, Origin::kBoundary).superseded, 0);
  EXPECT_EQ(put(key(), longer, Origin::kWarmup).superseded, 0);
  EXPECT_EQ(store_->stats().entries, 6);
  EXPECT_EQ(store_->stats().supersedes, 0);
  // The same chain does supersede.
  EXPECT_EQ(put(key(), longer).superseded, 1);
  EXPECT_EQ(store_->stats().entries, 6);
}

TEST_P(SupersedeTest, NotForAnEqualLengthOrDivergingVector) {
  const V base = iota_tokens(20);
  put(key(), base);
  V same_length = base;
  same_length.back() = -1;
  EXPECT_EQ(put(key(), same_length).superseded, 0);
  V diverging = concat(base, iota_tokens(10, 500));
  diverging[5] = -2;  // longer, but not an extension
  EXPECT_EQ(put(key(), diverging).superseded, 0);
  V shorter(base.begin(), base.begin() + 10);  // a prefix of base arriving later
  EXPECT_EQ(put(key(), shorter).superseded, 0);
  EXPECT_EQ(store_->stats().entries, 4);
  EXPECT_EQ(store_->stats().supersedes, 0);
}

TEST_P(SupersedeTest, FreesTheAncestorBeforeTheBudgetCheck) {
  make(1000);
  put(key_for("bystander"), iota_tokens(20, 7000), Origin::kCompletion, 300);
  const V turn1 = iota_tokens(40);
  put(key(), turn1, Origin::kCompletion, 600);
  // 300 + 600 + 700 > 1000, but 300 + 700 fits once the ancestor is gone.
  InsertResult r = put(key(), concat(turn1, iota_tokens(30, 900)), Origin::kCompletion, 700);
  EXPECT_EQ(r.outcome, InsertOutcome::kInserted);
  EXPECT_EQ(r.superseded, 1);
  EXPECT_EQ(r.evicted_lru, 0);
  EXPECT_EQ(r.self_evicted, 0);
  StoreStats s = store_->stats();
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.bytes, 1000);
  EXPECT_EQ(s.evictions_lru, 0);
  EXPECT_TRUE(store_->lookup(key_for("bystander"), iota_tokens(21, 7000)).hit());
}

INSTANTIATE_TEST_SUITE_P(NamedAndAnonymous, SupersedeTest, ::testing::Values("conv-1", ""),
                         [](const auto& param_info) {
                           return param_info.param.empty() ? std::string("anonymous")
                                                           : std::string("named");
                         });

TEST(SupersedeAnonymous, DifferentConversationsNeverSupersedeEachOther) {
  ManualClock clock;
  Store store(MatchMode::kExactPrefix,
              StorePolicy{.capacity_bytes = 1'000'000, .max_entries = 100, .min_prefix_tokens = 1},
              clock);
  const CacheKey anon = key_for("");
  const V system = iota_tokens(10);
  // Two local clients share the system prompt, then ask different things.
  V a = concat(system, iota_tokens(10, 100));
  V b = concat(system, iota_tokens(10, 200));
  for (int turn = 0; turn < 5; ++turn) {
    a = concat(a, iota_tokens(5, 1000 + turn * 10));
    b = concat(b, iota_tokens(5, 2000 + turn * 10));
    store.insert(anon, Origin::kCompletion, a, snap(10, a.size()));
    store.insert(anon, Origin::kCompletion, b, snap(10, b.size()));
  }
  StoreStats s = store.stats();
  EXPECT_EQ(s.entries, 2);  // one chain per conversation
  EXPECT_EQ(s.supersedes, 8);
  EXPECT_TRUE(store.lookup(anon, concat(a, {1})).hit());
  EXPECT_TRUE(store.lookup(anon, concat(b, {1})).hit());
}

}  // namespace
}  // namespace recur::cache
