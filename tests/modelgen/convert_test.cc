// The generator's buffer conversion: little-endian elements of the requested type.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "modelgen/safetensors_writer.h"

namespace recur::modelgen {
namespace {

TEST(HalfFormats, ConvertBufferLittleEndian) {
  const float src[3] = {1.0f, -2.0f, 0.5f};
  std::byte out[12];
  convert_from_f32(src, DType::kBF16, out);
  EXPECT_EQ(std::to_integer<int>(out[0]), 0x80);
  EXPECT_EQ(std::to_integer<int>(out[1]), 0x3F);
  EXPECT_EQ(std::to_integer<int>(out[3]), 0xC0);
  convert_from_f32(src, DType::kF16, out);
  EXPECT_EQ(std::to_integer<int>(out[4]), 0x00);
  EXPECT_EQ(std::to_integer<int>(out[5]), 0x38);  // 0.5 = 0x3800
  convert_from_f32(src, DType::kF32, out);
  EXPECT_EQ(std::memcmp(out, src, 12), 0);
}

}  // namespace
}  // namespace recur::modelgen
