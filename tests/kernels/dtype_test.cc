// bf16 / f16 conversions: exact round-to-nearest-even against the compiler's _Float16 and
// hand-picked bf16 ties.
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace recur::kernels {
namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
}

TEST(Dtype, F16RoundTripsEveryValue) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto hh = static_cast<std::uint16_t>(h);
    const float f = f16_to_f32(hh);
    const _Float16 ref = std::bit_cast<_Float16>(hh);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(ref)));
      continue;
    }
    ASSERT_EQ(f, static_cast<float>(ref)) << h;
    ASSERT_EQ(f32_to_f16(f), hh) << h;
  }
}

TEST(Dtype, F16MatchesCompilerRounding) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns around the f16 range, including subnormals and overflow.
    const std::uint32_t u = (rng() & 0x807fffffu) | ((100u + rng() % 45u) << 23);
    const float f = from_bits(u);
    const auto ref = std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(f32_to_f16(f), ref) << std::hex << u;
  }
}

}  // namespace
}  // namespace recur::kernels
