// Model-aware default budgets (values worked out by hand from docs/prompt-cache.md), explicit
// settings winning, the one warning that names the flag, and /proc/meminfo parsing.
#include "cache/budgets.h"

#include <gtest/gtest.h>

#include "cache/prompt_cache.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::iota_tokens;
using testing::key_for;
using testing::snap;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// A hybrid model: 50 MB of recurrent state plus 10 kB of attention KV per token.
ModelFootprint hybrid(std::int64_t context_tokens) {
  return {.snapshot_bytes_at = [](std::int64_t n) { return 50'000'000 + n * 10'000; },
          .truncatable = false,
          .context_tokens = context_tokens};
}

// A dense model: 100 kB of KV per token.
ModelFootprint dense(std::int64_t context_tokens) {
  return {.snapshot_bytes_at = [](std::int64_t n) { return n * 100'000; },
          .truncatable = true,
          .context_tokens = context_tokens};
}

TEST(Budgets, HybridModelSizesTheSnapshotStoreForSeveralConversations) {
  CacheBudgets b = choose_budgets(hybrid(32768), CacheSettings{}, 64 * kGiB);
  // entry at 8192 tokens = 131,920,000; 8 conversations x 3 entries.
  EXPECT_EQ(b.snapshot.capacity_bytes, std::int64_t{24} * 131'920'000);
  EXPECT_TRUE(b.snapshot.enabled);
  EXPECT_EQ(b.snapshot.max_entries,
            std::int64_t{24} * 131'920'000 / 50'160'000);  // 63 entries of 16 tokens
  EXPECT_EQ(b.snapshot.ttl_ns, 3600 * kNanosPerSecond);
  EXPECT_EQ(b.snapshot.min_prefix_tokens, 16);
  EXPECT_FALSE(b.prefix.enabled);  // a hybrid model never fills the prefix store
  EXPECT_EQ(b.prefix.capacity_bytes, 0);
  EXPECT_TRUE(b.warnings.empty());
  EXPECT_EQ(
      describe_budgets(b),
      "prefix store off; snapshot store 2.95 GiB, 63 entries, ttl 3600s, min prefix 16 tokens");
}

TEST(Budgets, MemoryShareCapsTheBudgetAndOneWarningNamesTheFlag) {
  CacheBudgets b = choose_budgets(hybrid(32768), CacheSettings{}, 2 * kGiB);
  EXPECT_EQ(b.snapshot.capacity_bytes, 512 * kMiB);  // a quarter of what is available
  EXPECT_TRUE(b.warnings.empty());                   // 377,680,000 at 32k still fits

  b = choose_budgets(hybrid(131072), CacheSettings{}, 2 * kGiB);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("--prompt-cache-snapshot-capacity-bytes"), std::string::npos)
      << b.warnings[0];
  EXPECT_NE(b.warnings[0].find("RECUR_PROMPT_CACHE_SNAPSHOT_CAPACITY_BYTES"), std::string::npos);
  EXPECT_NE(b.warnings[0].find("1360720000"), std::string::npos) << b.warnings[0];
  // (512 MiB - 50 MB) / 10 kB per token: the longest entry the budget holds.
  EXPECT_NE(b.warnings[0].find("up to 48687 tokens"), std::string::npos) << b.warnings[0];
}

TEST(Budgets, ExplicitSettingsAlwaysWin) {
  CacheSettings s;
  s.snapshot_capacity_bytes = 1000;
  s.snapshot_max_entries = 7;
  s.snapshot_ttl_ns = 5;
  s.min_prefix_tokens = 3;
  s.capacity_bytes = 12345;  // sizing the unused store turns it on
  CacheBudgets b = choose_budgets(hybrid(4096), s, 64 * kGiB);
  EXPECT_EQ(b.snapshot.capacity_bytes, 1000);
  EXPECT_EQ(b.snapshot.max_entries, 7);
  EXPECT_EQ(b.snapshot.ttl_ns, 5);
  EXPECT_EQ(b.snapshot.min_prefix_tokens, 3);
  EXPECT_TRUE(b.prefix.enabled);
  EXPECT_EQ(b.prefix.capacity_bytes, 12345);
  ASSERT_EQ(b.warnings.size(), 1u);  // 1000 bytes cannot hold one entry
  EXPECT_NE(b.warnings[0].find("--prompt-cache-snapshot-capacity-bytes"), std::string::npos);
}

TEST(Budgets, DenseModelUsesThePrefixStore) {
  CacheBudgets b = choose_budgets(dense(4096), CacheSettings{}, 64 * kGiB);
  // entry at 4096 tokens = 409.6 MB; 8 conversations x 2 entries.
  EXPECT_EQ(b.prefix.capacity_bytes, std::int64_t{16} * 409'600'000);
  EXPECT_EQ(b.prefix.max_entries, kMaxAutoEntries);  // 16-token entries are tiny
  EXPECT_EQ(b.prefix.block_tokens, 16);
  EXPECT_FALSE(b.snapshot.enabled);
  b = choose_budgets(dense(131072), CacheSettings{}, 8 * kGiB);
  EXPECT_EQ(b.prefix.capacity_bytes, 2 * kGiB);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("--prompt-cache-capacity-bytes"), std::string::npos);
}

TEST(Budgets, FloorUnlessMemoryIsShortAndUnknownMemoryIsCapped) {
  ModelFootprint tiny{.snapshot_bytes_at = [](std::int64_t n) { return n * 10; },
                      .truncatable = false,
                      .context_tokens = 2048};
  EXPECT_EQ(choose_budgets(tiny, CacheSettings{}, 64 * kGiB).snapshot.capacity_bytes, 256 * kMiB);
  EXPECT_EQ(choose_budgets(tiny, CacheSettings{}, 100 * kMiB).snapshot.capacity_bytes, 25 * kMiB);
  CacheBudgets b = choose_budgets(hybrid(32768), CacheSettings{}, -1);
  EXPECT_EQ(b.snapshot.capacity_bytes, 2 * kGiB);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("unknown"), std::string::npos);
}

TEST(Budgets, DisabledCacheAndSwitchedOffOrigins) {
  CacheSettings off;
  off.enabled = false;
  CacheBudgets b = choose_budgets(hybrid(4096), off, 64 * kGiB);
  EXPECT_FALSE(b.snapshot.enabled);
  EXPECT_FALSE(b.prefix.enabled);
  EXPECT_TRUE(b.warnings.empty());

  CacheSettings no_extras;
  no_extras.boundary = false;
  no_extras.warmup = false;
  ManualClock clock;
  PromptCache cache(choose_budgets(hybrid(4096), no_extras, 64 * kGiB), clock);
  const auto tokens = iota_tokens(32);
  EXPECT_EQ(cache.insert(key_for(), Origin::kBoundary, tokens, snap(10, 32)).outcome,
            InsertOutcome::kRejectedDisabled);
  EXPECT_EQ(cache.insert(key_for(), Origin::kWarmup, tokens, snap(10, 32)).outcome,
            InsertOutcome::kRejectedDisabled);
  EXPECT_EQ(cache.insert(key_for(), Origin::kCompletion, tokens, snap(10, 32)).outcome,
            InsertOutcome::kInserted);
  EXPECT_EQ(cache.stats().snapshot.rejections_disabled, 2);
}

TEST(PromptCache, RoutesByTruncatabilityAndClearsBoth) {
  CacheSettings s;
  s.capacity_bytes = 1'000'000;
  s.snapshot_capacity_bytes = 1'000'000;
  ManualClock clock;
  PromptCache cache(choose_budgets(hybrid(4096), s, 64 * kGiB), clock);
  const auto tokens = iota_tokens(32);
  ASSERT_TRUE(cache.insert(key_for(), Origin::kCompletion, tokens, snap(10, 32, true)).admitted());
  ASSERT_TRUE(cache.insert(key_for(), Origin::kCompletion, tokens, snap(20, 32, false)).admitted());
  EXPECT_EQ(cache.stats().prefix.bytes, 10);
  EXPECT_EQ(cache.stats().snapshot.bytes, 20);
  EXPECT_TRUE(cache.lookup(key_for("x"), iota_tokens(40), /*truncatable=*/true).hit());
  EXPECT_EQ(cache.lookup(key_for("x"), iota_tokens(40), false).miss, MissReason::kDifferentSession);
  ClearResult c = cache.clear();
  EXPECT_EQ(c.freed_entries, 2);
  EXPECT_EQ(c.freed_bytes, 30);
  EXPECT_EQ(cache.sweep(), 0);
}

TEST(MemInfo, ParsesMemAvailableAndNamesBadLines) {
  Result<std::int64_t> r = parse_mem_available(
      "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, std::int64_t{8'000'000} * 1024);
  r = parse_mem_available("MemTotal: 1 kB\nMemFree: 2 kB\n");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  r = parse_mem_available("MemTotal: 1 kB\nMemAvailable: lots\n");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("lots"), std::string::npos);
  EXPECT_FALSE(parse_mem_available("MemAvailable: 12 MB\n").is_ok());
  Result<std::int64_t> live = read_mem_available();
  ASSERT_TRUE(live.is_ok()) << live.status().to_string();
  EXPECT_GT(*live, 0);
  EXPECT_EQ(read_mem_available("/nonexistent/meminfo").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace recur::cache
