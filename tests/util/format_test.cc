// Byte sizes for people, as the startup log and the cache's warnings print them.
#include "util/format.h"

#include <gtest/gtest.h>

namespace recur {
namespace {

constexpr std::int64_t kKiB = std::int64_t{1} << 10;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kTiB = std::int64_t{1} << 40;

TEST(FormatBytes, BinaryUnitsWithTwoDecimals) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(kKiB), "1.00 KiB");
  EXPECT_EQ(format_bytes(3 * kMiB / 2), "1.50 MiB");
  EXPECT_EQ(format_bytes(2 * kGiB), "2.00 GiB");
  EXPECT_EQ(format_bytes(kTiB), "1.00 TiB");
  EXPECT_EQ(format_bytes(2048 * kTiB), "2048.00 TiB") << "TiB is the largest unit";
  EXPECT_EQ(format_bytes(-5), "-5 B");
}

}  // namespace
}  // namespace recur
