// The safetensors writer: little-endian elements of the requested type, and shards whose bytes do
// not depend on the thread count.
#include "convert/safetensors_writer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/thread_pool.h"

namespace recur::convert {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

TEST(WriteShard, BytesDoNotDependOnTheThreadCount) {
  const std::vector<TensorEntry> entries = {
      {.name = "big", .shape = {3, kBlockElems / 2 + 17}, .dtype = DType::kBF16},
      {.name = "f32", .shape = {5}, .dtype = DType::kF32},
      {.name = "another", .shape = {kBlockElems + 1}, .dtype = DType::kF16}};
  auto shards = plan_shards(entries, 1);
  ASSERT_TRUE(shards.is_ok());
  const FillFn fill = [](std::size_t t, std::int64_t block, std::span<float> out) {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = float(t) + float(block) * 0.5f + float(i % 97) * 0.01f;
  };
  std::string bytes[2];
  for (int k = 0; k < 2; ++k) {
    ThreadPool pool(k == 0 ? 1 : 4);
    const fs::path p = fs::temp_directory_path() / fmt::format("recur-st-{}-{}", ::getpid(), k);
    ASSERT_TRUE(write_shard(p.string(), (*shards)[0], entries, fill, pool).is_ok());
    bytes[k] = slurp(p);
    fs::remove(p);
  }
  EXPECT_EQ(bytes[0], bytes[1]);
  const std::int64_t data = 5 * 4 + (3 * (kBlockElems / 2 + 17) + kBlockElems + 1) * 2;
  EXPECT_EQ(static_cast<std::int64_t>(bytes[0].size()),
            8 + static_cast<std::int64_t>((*shards)[0].header.size()) + data);
}

}  // namespace
}  // namespace recur::convert
