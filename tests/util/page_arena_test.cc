#include "util/page_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace recur {
namespace {

bool all_zero(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

TEST(PageArena, BuffersAreZeroedAlignedAndDisjoint) {
  PageArena arena;
  struct Buffer {
    unsigned char* p;
    std::size_t n;
  };
  std::vector<Buffer> buffers;
  // Sizes that are not multiples of 64, and enough of them to fill more than one chunk.
  const std::size_t sizes[] = {1, 63, 64, 65, 4096, 1000000, 3 << 20};
  std::size_t asked = 0;
  for (int round = 0; round < 12; ++round) {
    for (std::size_t n : sizes) {
      auto* p = static_cast<unsigned char*>(arena.allocate(n));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << n;
      ASSERT_TRUE(all_zero(p, n)) << n;
      buffers.push_back({p, n});
      asked += n;
    }
  }
  // Fill each with its own byte, then check no other buffer's writes reached it.
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    std::memset(buffers[i].p, static_cast<int>(i % 250 + 1), buffers[i].n);
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const auto want = static_cast<unsigned char>(i % 250 + 1);
    for (std::size_t j = 0; j < buffers[i].n; j += 61) ASSERT_EQ(buffers[i].p[j], want) << i;
    ASSERT_EQ(buffers[i].p[buffers[i].n - 1], want) << i;
  }
  EXPECT_EQ(arena.bytes(), asked);
  EXPECT_GT(arena.mapped_bytes(), asked);
}

TEST(PageArena, ABufferLargerThanAChunkGetsItsOwn) {
  PageArena arena;
  const std::size_t big = PageArena::kChunkBytes + 12345;
  auto* a = static_cast<unsigned char*>(arena.allocate(100));
  auto* b = static_cast<unsigned char*>(arena.allocate(big));
  auto* c = static_cast<unsigned char*>(arena.allocate(100));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  b[0] = 1;
  b[big - 1] = 2;
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(c[0], 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % PageArena::kHugePage, 0u);
  EXPECT_EQ(arena.bytes(), big + 200);
}

TEST(PageArena, ZeroBytesStillGivesADistinctBuffer) {
  PageArena arena;
  void* a = arena.allocate(0);
  void* b = arena.allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(arena.bytes(), 0u);
}

}  // namespace
}  // namespace recur
