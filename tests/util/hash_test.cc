#include "util/hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace recur {
namespace {

TEST(Hash, StableKnownValue) {
  // XXH3-64 of the empty input with seed 0 is a published constant; if this changes, stored
  // fingerprints would silently stop matching.
  EXPECT_EQ(hash64("", 0), 0x2D06800538D394C2ull);
}

TEST(Hash, IncrementalEqualsOneShot) {
  std::string s = "the quick brown fox jumps over the lazy dog";
  Hasher h(7);
  h.update(s.substr(0, 10)).update(s.substr(10));
  EXPECT_EQ(h.digest(), hash64(s, 7));
}

TEST(Hash, SeedsAndOrderMatter) {
  EXPECT_NE(hash64("abc", 1), hash64("abc", 2));
  EXPECT_NE(hash_combine(1, 2), hash_combine(2, 1));
  std::vector<int> a = {1, 2, 3};
  EXPECT_EQ(hash64(std::span<const int>(a)), hash64(a.data(), 12));
}

}  // namespace
}  // namespace recur
