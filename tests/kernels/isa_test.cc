// ISA names, detection and forcing.
#include "kernels/isa.h"

#include <gtest/gtest.h>

namespace recur::kernels {
namespace {

TEST(Isa, ParsesEveryName) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx, Isa::kAuto}) {
    auto parsed = parse_isa(isa_name(isa));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, isa);
  }
  auto bad = parse_isa("sse9");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("sse9"), std::string::npos);
}

TEST(Isa, AutoSelectsTheBestSupported) {
  const Isa saved = active_isa();
  auto isa = select_isa(Isa::kAuto);
  ASSERT_TRUE(isa.is_ok());
  EXPECT_EQ(*isa, best_isa());
  EXPECT_EQ(active_isa(), best_isa());
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  // The ladder is monotone: a better ISA implies the worse ones.
  if (isa_supported(Isa::kAmx)) {
    EXPECT_TRUE(isa_supported(Isa::kAvx512));
  }
  if (isa_supported(Isa::kAvx512) || isa_supported(Isa::kAvx2Vnni)) {
    EXPECT_TRUE(isa_supported(Isa::kAvx2));
  }
  (void)select_isa(saved);
}

TEST(Isa, ForcingAMissingIsaFailsClearly) {
  const Isa saved = active_isa();
  for (Isa isa : {Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx}) {
    auto r = select_isa(isa);
    if (isa_supported(isa)) {
      EXPECT_TRUE(r.is_ok());
      EXPECT_EQ(active_isa(), isa);
      continue;
    }
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find(isa_name(isa)), std::string::npos);
    EXPECT_NE(r.status().message().find("lacks"), std::string::npos);
  }
  (void)select_isa(saved);
}

}  // namespace
}  // namespace recur::kernels
