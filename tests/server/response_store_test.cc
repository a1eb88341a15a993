#include "server/response_store.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

using namespace std::chrono_literals;
using Clock = ResponseStore::Clock;

StoredResponse response(std::string id, std::string text,
                        std::shared_ptr<const StoredResponse> parent = nullptr) {
  StoredResponse r{.id = std::move(id), .tenant = "t", .session = "s", .parent = std::move(parent)};
  r.messages.push_back(chat::Message{.role = "user", .content = text});
  r.messages.push_back(chat::Message{.role = "assistant", .content = "re: " + text});
  return r;
}

TEST(ResponseStore, ChainsShareTheirHistory) {
  ResponseStore store({.capacity_bytes = 1 << 20, .ttl = 1h});
  const auto t0 = Clock::now();
  ASSERT_TRUE(store.put(response("a", "one"), t0));
  auto a = store.get("a", "t", t0);
  ASSERT_TRUE(a);
  ASSERT_TRUE(store.put(response("b", "two", a), t0));
  auto b = store.get("b", "t", t0);
  ASSERT_TRUE(b);
  auto h = b->history();
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].content, "one");
  EXPECT_EQ(h[3].content, "re: two");
  EXPECT_EQ(b->chain_bytes, a->chain_bytes + b->own_bytes());
}

TEST(ResponseStore, TheInputAsSentCountsInItsBytes) {
  StoredResponse r = response("a", "one");
  const std::size_t without = r.own_bytes();
  r.input_json = std::string(5000, 'x');
  EXPECT_EQ(r.own_bytes(), without + 5000);
  ResponseStore store({.capacity_bytes = 4000, .ttl = 1h});
  EXPECT_FALSE(store.put(std::move(r))) << "the kept input alone exceeds the budget";
}

TEST(ResponseStore, AnotherTenantNeverFindsIt) {
  ResponseStore store({.capacity_bytes = 1 << 20, .ttl = 1h});
  ASSERT_TRUE(store.put(response("a", "one")));
  EXPECT_FALSE(store.get("a", "other"));
  EXPECT_FALSE(store.erase("a", "other"));
  EXPECT_TRUE(store.get("a", "t"));
  EXPECT_TRUE(store.erase("a", "t"));
  EXPECT_FALSE(store.get("a", "t"));
}

TEST(ResponseStore, ExpiresAfterTheTtl) {
  ResponseStore store({.capacity_bytes = 1 << 20, .ttl = 10s});
  const auto t0 = Clock::now();
  ASSERT_TRUE(store.put(response("a", "one"), t0));
  EXPECT_TRUE(store.get("a", "t", t0 + 9s));
  EXPECT_FALSE(store.get("a", "t", t0 + 10s));
  EXPECT_EQ(store.stats().entries, 0u);
  EXPECT_EQ(store.stats().live_bytes, 0);
}

TEST(ResponseStore, CountsAncestorsKeptAliveAndStaysWithinItsBytes) {
  const std::size_t one = response("x0", std::string(1000, 'x')).own_bytes();
  ResponseStore store({.capacity_bytes = one * 3 + one / 2, .ttl = 1h});
  const auto t0 = Clock::now();
  std::shared_ptr<const StoredResponse> last;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store.put(response("x" + std::to_string(i), std::string(1000, 'x'), last), t0));
    last = store.get("x" + std::to_string(i), "t", t0);
    ASSERT_TRUE(last);
  }
  last.reset();
  EXPECT_EQ(store.stats().entries, 3u);
  // An unrelated response needs room: the oldest entry goes, but its node lives on as an
  // ancestor of x2, so eviction continues until the live bytes fit.
  ASSERT_TRUE(store.put(response("y", std::string(1000, 'y')), t0));
  EXPECT_LE(store.stats().live_bytes, static_cast<std::int64_t>(one * 3 + one / 2));
  EXPECT_TRUE(store.get("y", "t", t0));
  EXPECT_FALSE(store.get("x0", "t", t0));
}

TEST(ResponseStore, RefusesWhatCannotFit) {
  ResponseStore off({.capacity_bytes = 0, .ttl = 1h});
  EXPECT_FALSE(off.put(response("a", "one")));
  EXPECT_FALSE(off.get("a", "t"));
  ResponseStore small({.capacity_bytes = 300, .ttl = 1h});
  EXPECT_FALSE(small.put(response("a", std::string(1000, 'x'))));
  EXPECT_EQ(small.stats().live_bytes, 0);
}

}  // namespace
}  // namespace recur::server
