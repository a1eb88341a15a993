// Shared system-prompt entries (origin shared, the tenant's shared session) in the disk tier: after
// a restart, or when RAM evicted them, a new conversation of the same tenant and bucket resumes
// from them; other tenants and buckets never do; a conversation's own state wins when at least as
// long; --no-prompt-cache-shared turns the lookup off; hits_shared counts them; an entry loaded
// from disk goes back into RAM under the shared session, where every conversation finds it.
#include <gtest/gtest.h>

#include "cache/prompt_cache.h"
#include "disk_test_util.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::bytes_of;
using testing::bytes_snap;
using testing::concat;
using testing::iota_tokens;
using testing::key_for;
using testing::load;
using testing::open_tier;
using testing::ScratchDir;
using testing::store_policy;
using V = std::vector<Token>;

// The shared session of `tenant` (and bucket m1): where the engine stores system-prompt entries.
CacheKey shared_key(std::string tenant = "t1") {
  CacheKey k = key_for("", std::move(tenant));
  k.session = SessionKey::shared();
  return k;
}

const V kSystem = iota_tokens(24, 1000);

TEST(DiskShared, ANewConversationResumesFromTheSharedEntryAfterARestart) {
  ScratchDir dir;
  {
    auto tier = open_tier(dir.path());
    tier->store(shared_key(), Origin::kShared, kSystem, bytes_snap(3000, kSystem.size(), 4));
  }  // the destructor writes what is queued
  auto tier = open_tier(dir.path());
  ASSERT_EQ(tier->stats().indexed_at_start, 1);
  const V prompt = concat(kSystem, V{1, 2, 3});
  for (const char* session : {"new-1", "new-2", ""}) {
    auto l = load(*tier, key_for(session), prompt);
    ASSERT_TRUE(l->hit().has_value()) << session;
    EXPECT_EQ(l->hit()->origin, Origin::kShared);
    EXPECT_EQ(l->hit()->n_tokens_usable, 24);
    EXPECT_EQ(bytes_of(l->hit()->snapshot), bytes_snap(3000, 24, 4)->bytes());
  }
  // Another tenant, another bucket, or a prompt that is not an extension: nothing.
  EXPECT_EQ(load(*tier, key_for("new-1", "t2"), prompt)->miss(), "none_longer");
  EXPECT_EQ(load(*tier, key_for("new-1", "t1", "m2"), prompt)->miss(), "none_longer");
  V other = prompt;
  other[5] = 7;
  EXPECT_EQ(load(*tier, key_for("new-1"), other)->miss(), "none_longer");
  // A system prompt alone leaves no token to compute: the entry stands for no more than RAM had.
  EXPECT_FALSE(load(*tier, key_for("new-1"), kSystem)->hit().has_value());
  // Nothing better than RAM's own hit of the same length.
  EXPECT_FALSE(load(*tier, key_for("new-1"), prompt, false, /*better_than=*/24)->hit().has_value());
  const DiskStats s = tier->stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.hits_shared, 3);
  EXPECT_EQ(s.tokens_reused, 72);
}

TEST(DiskShared, AConversationsOwnStateWinsWhenAtLeastAsLong) {
  ScratchDir dir;
  auto tier = open_tier(dir.path());
  const V own_longer = concat(kSystem, V{5, 6});
  tier->store(shared_key(), Origin::kShared, kSystem, bytes_snap(1000, kSystem.size(), 1));
  tier->store(key_for("a"), Origin::kBoundary, own_longer, bytes_snap(1000, own_longer.size(), 2));
  tier->store(key_for("b"), Origin::kBoundary, kSystem, bytes_snap(1000, kSystem.size(), 3));
  tier->flush();
  const V prompt = concat(own_longer, V{9});
  auto a = load(*tier, key_for("a"), prompt);
  ASSERT_TRUE(a->hit().has_value());
  EXPECT_EQ(a->hit()->origin, Origin::kBoundary);
  EXPECT_EQ(a->hit()->n_tokens_usable, 26);
  // Equal length: the conversation's own entry, not the shared one.
  auto b = load(*tier, key_for("b"), prompt);
  ASSERT_TRUE(b->hit().has_value());
  EXPECT_EQ(b->hit()->origin, Origin::kBoundary);
  EXPECT_EQ(bytes_of(b->hit()->snapshot), bytes_snap(1000, 24, 3)->bytes());
  // A third conversation has only the shared one.
  auto c = load(*tier, key_for("c"), prompt);
  ASSERT_TRUE(c->hit().has_value());
  EXPECT_EQ(c->hit()->origin, Origin::kShared);
  EXPECT_EQ(tier->stats().hits_shared, 1);
}

TEST(DiskShared, SwitchedOffSharedEntriesAreNotLookedUp) {
  ScratchDir dir;
  auto tier = open_tier(dir.path());
  tier->store(shared_key(), Origin::kShared, kSystem, bytes_snap(1000, kSystem.size(), 1));
  tier->flush();
  StorePolicy off = store_policy();
  off.origin_enabled[static_cast<int>(Origin::kShared)] = false;
  EXPECT_FALSE(load(*tier, key_for("a"), concat(kSystem, V{1}), false, 0, off)->hit().has_value());
  EXPECT_TRUE(load(*tier, key_for("a"), concat(kSystem, V{1}))->hit().has_value());
}

TEST(DiskShared, AReplicaFindsASharedEntryAnotherWroteAfterItStarted) {
  ScratchDir dir;
  auto a = open_tier(dir.path());
  auto b = open_tier(dir.path());
  a->store(shared_key(), Origin::kShared, kSystem, bytes_snap(2000, kSystem.size(), 6));
  a->flush();
  auto l = load(*b, key_for("elsewhere"), concat(kSystem, V{4}));
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_EQ(l->hit()->origin, Origin::kShared);
  EXPECT_EQ(b->stats().discovered, 1);
}

TEST(DiskShared, SharedEntriesAreEvictedByTheSameByteBudget) {
  ScratchDir dir;
  // Two files fit: 128-byte header + 4 bytes a token + 1000 payload bytes each.
  auto tier = open_tier(dir.path(), /*capacity=*/2 * (128 + 26 * 4 + 1000));
  tier->store(shared_key(), Origin::kShared, kSystem, bytes_snap(1000, kSystem.size(), 1));
  tier->flush();
  for (int i = 0; i < 2; ++i) {
    const V t = concat(iota_tokens(24, 50 + i), V{1, 2});
    tier->store(key_for("s" + std::to_string(i)), Origin::kBoundary, t,
                bytes_snap(1000, t.size(), i));
  }
  tier->flush();
  EXPECT_EQ(tier->stats().evictions, 1);
  EXPECT_FALSE(load(*tier, key_for("a"), concat(kSystem, V{1}))->hit().has_value());
}

TEST(DiskShared, AnEntryLoadedFromDiskGoesIntoRamUnderTheSharedSession) {
  ScratchDir dir;
  {
    auto tier = open_tier(dir.path());
    tier->store(shared_key(), Origin::kShared, kSystem, bytes_snap(3000, kSystem.size(), 4));
  }
  ManualClock clock;
  CacheBudgets budgets{.prefix = store_policy(), .snapshot = store_policy()};
  PromptCache cache(budgets, clock, open_tier(dir.path()));
  const V prompt = concat(kSystem, V{1, 2});
  EXPECT_FALSE(cache.lookup(key_for("first"), prompt, false).hit());
  std::promise<void> done;
  auto l = cache.load_from_disk(key_for("first"), prompt, false, 0, [&] { done.set_value(); });
  ASSERT_NE(l, nullptr);
  done.get_future().wait();
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_TRUE(cache.adopt(key_for("first"), *l->hit()).admitted());
  // Another new conversation finds it in RAM now, as the tenant's shared entry.
  const LookupResult r = cache.lookup(key_for("second"), prompt, false);
  ASSERT_TRUE(r.hit());
  EXPECT_EQ(r.origin, Origin::kShared);
  EXPECT_EQ(r.n_tokens_usable, 24);
  EXPECT_EQ(cache.stats().snapshot.hits_shared, 1);
  // Another tenant still does not.
  EXPECT_FALSE(cache.lookup(key_for("second", "t2"), prompt, false).hit());
}

}  // namespace
}  // namespace recur::cache
