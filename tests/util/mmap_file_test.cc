#include "util/mmap_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace recur {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("recur_mmap_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(MappedFile, MapsWhatWasWritten) {
  std::string path = temp_path("a.bin");
  std::string data(100000, 'x');
  data[12345] = 'y';
  ASSERT_TRUE(write_file_atomic(path, data).is_ok());
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->size(), data.size());
  EXPECT_EQ(f->data()[12345], 'y');
  MappedFile moved = std::move(f).value();
  EXPECT_EQ(moved.size(), data.size());
  EXPECT_EQ(*read_file(path), data);
  std::filesystem::remove(path);
}

TEST(MappedFile, EmptyFileMapsToNothing) {
  std::string path = temp_path("empty.bin");
  ASSERT_TRUE(write_file_atomic(path, "").is_ok());
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->size(), 0u);
  std::filesystem::remove(path);
}

TEST(MappedFile, MissingFileIsNotFoundWithPath) {
  auto f = MappedFile::open("/nonexistent/recur/file.safetensors");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/recur/file.safetensors"), std::string::npos);
  EXPECT_EQ(read_file("/nonexistent/x").status().code(), StatusCode::kNotFound);
}

TEST(MappedFile, DirectoryIsRefused) {
  auto f = MappedFile::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace recur
