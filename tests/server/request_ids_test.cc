#include "server/request_ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace recur::server {
namespace {

// Regression: the engine request's id (and the default seed derived from it) was read from the
// counter after the response id had incremented it, so a request arriving in between made two
// requests share an id and, without `seed`, the same sampling seed.
TEST(RequestIds, ConcurrentRequestsNeverShareAnIdOrASeed) {
  RequestIds ids;
  constexpr int kThreads = 4;
  constexpr int kEach = 5000;
  std::vector<std::vector<RequestIdentity>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) got[t].push_back(ids.next("chatcmpl-"));
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> id_set;
  std::set<std::uint64_t> seed_set;
  for (const auto& v : got) {
    for (const RequestIdentity& r : v) {
      EXPECT_EQ(r.id.rfind("chatcmpl-", 0), 0u) << r.id;
      id_set.insert(r.id);
      seed_set.insert(r.seed);
    }
  }
  EXPECT_EQ(id_set.size(), static_cast<std::size_t>(kThreads * kEach));
  EXPECT_EQ(seed_set.size(), static_cast<std::size_t>(kThreads * kEach));
}

TEST(RequestIds, IdsAreThePrefixAndAnUnguessableToken) {
  RequestIds ids;
  const RequestIdentity a = ids.next("resp_");
  const RequestIdentity b = ids.next("resp_");
  EXPECT_EQ(a.id, "resp_" + a.token);
  ASSERT_EQ(a.token.size(), 32u);
  EXPECT_EQ(a.token.find_first_not_of("0123456789abcdef"), std::string::npos) << a.token;
  // Half of the token comes from the kernel's random source: consecutive requests share no
  // predictable suffix (a stored response is read by its id).
  EXPECT_NE(a.token.substr(16), b.token.substr(16));
  EXPECT_NE(a.token.substr(0, 16), b.token.substr(0, 16));
  RequestIds other;
  EXPECT_NE(other.next("resp_").id, a.id) << "another server (or a restart) draws other ids";
}

}  // namespace
}  // namespace recur::server
