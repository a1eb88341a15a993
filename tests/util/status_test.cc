#include "util/status.h"

#include <gtest/gtest.h>

namespace recur {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Error(StatusCode::kInvalidArgument, "value {} is not positive", v);
  return v;
}

Result<int> doubled(int v) {
  RECUR_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  RECUR_RETURN_IF_ERROR(parse_positive(a));
  RECUR_RETURN_IF_ERROR(parse_positive(b));
  return Status::ok();
}

TEST(Status, OkHasNoLocation) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "ok");
  EXPECT_TRUE(s.location().empty());
}

TEST(Status, ErrorCarriesMessageAndLocation) {
  auto r = parse_positive(-3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "value -3 is not positive");
  EXPECT_NE(r.status().location().find("status_test.cc:"), std::string::npos)
      << r.status().location();
  EXPECT_EQ(r.status().to_string(), "invalid argument: value -3 is not positive");
}

TEST(Status, PropagationMacros) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_EQ(doubled(0).status().message(), "value 0 is not positive");
  EXPECT_TRUE(check_both(1, 2).is_ok());
  EXPECT_EQ(check_both(1, -2).message(), "value -2 is not positive");
}

TEST(Status, WithContextPrefixes) {
  Status s = Status(StatusCode::kNotFound, "no such tensor").with_context("model.safetensors");
  EXPECT_EQ(s.message(), "model.safetensors: no such tensor");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST(Status, ResultFromOkStatusIsAnInternalError) {
  Result<int> r{Status::ok()};
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace recur
