// Helpers for model tests: hand-built safetensors bytes, temp folders, generated checkpoints.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "modelgen/generator.h"
#include "util/mmap_file.h"

namespace recur::model::testing {

// Safetensors bytes from a raw header text and a data block.
inline std::vector<std::uint8_t> safetensors_bytes(const std::string& header,
                                                   std::size_t data_bytes) {
  std::vector<std::uint8_t> out(8 + header.size() + data_bytes, 0);
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// A fresh empty folder under the test temp dir, removed at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("recur_model_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes a tiny generated checkpoint into dir/sub and returns its path.
inline std::string make_checkpoint(const TempDir& dir, const std::string& sub,
                                   modelgen::Family family, modelgen::DType dtype,
                                   std::uint64_t seed = 1, int shards = 1,
                                   const std::string& preset = "tiny") {
  modelgen::GenSpec spec;
  spec.family = family;
  spec.preset = preset;
  spec.dtype = dtype;
  spec.seed = seed;
  spec.shards = shards;
  std::string out = dir.file(sub);
  Status s = modelgen::write_checkpoint(spec, out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

inline const char* family_word(modelgen::Family f) { return modelgen::family_name(f); }

// Every generator family, in family_records() order: a family added there runs in every test
// instantiated over this list.
inline const std::vector<modelgen::Family> kAllFamilies = [] {
  std::vector<modelgen::Family> out;
  for (const modelgen::FamilyRecord& r : modelgen::family_records()) out.push_back(r.family);
  return out;
}();

// Whether the generator writes the family as an MLX quantized checkpoint (--bits): not gpt_oss,
// whose experts are MXFP4 as released (mlx-lm's own mxfp4 mode is not a format recur reads).
inline bool writes_mlx(modelgen::Family f) { return f != modelgen::Family::kGptOss; }

}  // namespace recur::model::testing
