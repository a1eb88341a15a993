// The safetensors parser: valid headers give views at the right places; every malformed input is
// an error naming the file and (where there is one) the tensor.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace recur::model {
namespace {

using testing::safetensors_bytes;

Result<SafetensorsHeader> parse(const std::vector<std::uint8_t>& b) {
  return parse_safetensors(b, "shard.safetensors");
}

void expect_error(const std::vector<std::uint8_t>& b, const std::string& needle) {
  auto r = parse(b);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("shard.safetensors"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(Safetensors, ParsesViewsIntoTheDataBlock) {
  const std::string h =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("a":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}})";
  auto bytes = safetensors_bytes(h, 12);
  auto r = parse(bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->tensors.size(), 2u);
  const std::uint8_t* data = bytes.data() + 8 + h.size();
  for (const auto& t : r->tensors) {
    if (t.name == "a") {
      EXPECT_EQ(t.dtype, DType::kBF16);
      EXPECT_EQ(t.shape, (std::vector<std::int64_t>{1, 2}));
      EXPECT_EQ(t.data, data);
      EXPECT_EQ(t.n_bytes, 4u);
    } else {
      EXPECT_EQ(t.name, "b");
      EXPECT_EQ(t.dtype, DType::kF32);
      EXPECT_EQ(t.data, data + 4);
    }
  }
  EXPECT_EQ(r->header_json, h);
}

TEST(Safetensors, ScalarAndEmptyTensorsAreValid) {
  auto r = parse(safetensors_bytes(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                                   R"("e":{"dtype":"F16","shape":[0,3],"data_offsets":[4,4]}})",
                                   4));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
}

TEST(Safetensors, TruncatedFile) { expect_error(std::vector<std::uint8_t>{1, 2, 3}, "truncated"); }

TEST(Safetensors, HeaderLengthBeyondFile) {
  auto b = safetensors_bytes("{}", 0);
  b[0] = 200;  // claims a 200-byte header in a 10-byte file
  expect_error(b, "runs past the end");
}

TEST(Safetensors, MalformedJson) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":)", 0), "not a valid JSON");
  expect_error(safetensors_bytes(R"([1,2])", 0), "not a valid JSON object");
}

TEST(Safetensors, MissingFieldsAndBadTypes) {
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", 4), "'w'");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", 4),
               "unknown dtype 'Q4'");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
               "'w'");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":"x","data_offsets":[0,4]}})", 4),
               "shape is not an array");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
               "data_offsets must be");
}

TEST(Safetensors, ByteCountMismatch) {
  expect_error(safetensors_bytes(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}})", 8),
               "tensor 'w': 4 bytes in data_offsets but dtype BF16 shape [3] needs 6");
}

TEST(Safetensors, OffsetsOutOfRange) {
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8),
               "tensor 'w': data_offsets [4, 12) run past the data block of 8 bytes");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[9,9]}})", 8),
               "run past");
  expect_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
               "end before begin");
}

TEST(Safetensors, OverlappingTensors) {
  expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                 8),
               "tensors 'a' and 'b' overlap");
}

TEST(Safetensors, HugeShapeIsRejectedWithoutOverflow) {
  expect_error(
      safetensors_bytes(
          R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
      "too large");
}

// Found by fuzz_safetensors: a shape nested thousands deep overflowed the stack when the error
// message dumped it (fuzz/regressions/fuzz_safetensors).
TEST(Safetensors, DeepNestingIsAnErrorNotACrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error(
      safetensors_bytes(R"({"w":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})", 4),
      "nests deeper than 16 levels");
  // Brackets inside strings are text, not nesting.
  auto r =
      parse(safetensors_bytes(R"({"__metadata__":{"x":")" + std::string(100, '[') +
                                  R"("},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                              4));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->tensors.size(), 1u);
}

// Invariant 5: random corruption of a valid file is an error or a valid parse, never a crash or
// a view outside the buffer (run under ASan in the sanitizer build).
TEST(Safetensors, RandomCorruptionNeverEscapesTheBuffer) {
  const std::string h =
      R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[12,24]},"__metadata__":{"k":"v"}})";
  const auto good = safetensors_bytes(h, 24);
  std::mt19937 rng(42);
  int n_ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = good;
    const int n_flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < n_flips; ++f) {
      b[rng() % b.size()] =
          static_cast<std::uint8_t>(rng() % 2 ? rng() : "0123456789[]{},:\""[rng() % 17]);
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    auto r = parse(b);
    if (!r.is_ok()) continue;
    ++n_ok;
    for (const auto& t : r->tensors) {
      ASSERT_GE(t.data, b.data());
      ASSERT_LE(t.data + t.n_bytes, b.data() + b.size());
    }
  }
  EXPECT_GT(n_ok, 0);  // some corruptions (in the data block) stay valid
}

}  // namespace
}  // namespace recur::model
