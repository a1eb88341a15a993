// The non-recursive JSON nesting measure used before parsing untrusted text.
#include "util/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace recur {
namespace {

TEST(JsonNestingDepth, CountsArraysAndObjectsNotStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0);
  EXPECT_EQ(json_nesting_depth("{}"), 1);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[[{{{{", "b": "\"[[["})"), 1);
  EXPECT_EQ(json_nesting_depth(R"(["\\", [[]]])"), 3) << "an escaped backslash ends the escape";
}

TEST(JsonNestingDepth, HandlesHugeDepthWithoutRecursing) {
  const int n = 1'000'000;
  std::string deep = std::string(n, '[') + std::string(n, ']');
  EXPECT_EQ(json_nesting_depth(deep), n);
  EXPECT_EQ(json_nesting_depth(std::string(n, '{')), n) << "unterminated text still measures";
}

}  // namespace
}  // namespace recur
