// The cache layout huggingface_hub uses: folder names, refs, relative snapshot links, and which
// snapshots count as complete.
#include "hub/repo_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace recur::hub {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

class RepoCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("recur_repo_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void blob(const RepoCache& c, const std::string& etag, const std::string& text) {
    fs::create_directories(c.blob(etag).parent_path());
    std::ofstream(c.blob(etag), std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(RepoCacheTest, LayoutNames) {
  RepoCache c(dir_.string(), "Qwen/Qwen3.5-0.8B");
  EXPECT_EQ(c.root(), dir_ / "models--Qwen--Qwen3.5-0.8B");
  EXPECT_EQ(c.blob("abc"), dir_ / "models--Qwen--Qwen3.5-0.8B/blobs/abc");
  EXPECT_EQ(c.snapshot(kCommit), dir_ / "models--Qwen--Qwen3.5-0.8B/snapshots" / kCommit);
  EXPECT_EQ(c.lock("abc"), dir_ / ".locks/models--Qwen--Qwen3.5-0.8B/abc.lock");
}

TEST_F(RepoCacheTest, RefsHoldTheCommitWithoutNewline) {
  RepoCache c(dir_.string(), "org/m");
  EXPECT_FALSE(c.read_ref("main"));
  ASSERT_TRUE(c.write_ref("main", kCommit).is_ok());
  ASSERT_TRUE(c.write_ref("refs/pr/1", kCommit).is_ok());
  std::ifstream in(c.root() / "refs/main");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, kCommit);
  EXPECT_EQ(c.read_ref("refs/pr/1"), std::string(kCommit));
}

TEST_F(RepoCacheTest, SnapshotLinksAreRelative) {
  RepoCache c(dir_.string(), "org/m");
  blob(c, "e1", "{}");
  ASSERT_TRUE(c.link(kCommit, "config.json", "e1").is_ok());
  ASSERT_TRUE(c.link(kCommit, "sub/dir/x.json", "e1").is_ok());
  EXPECT_EQ(fs::read_symlink(c.snapshot(kCommit) / "config.json"), "../../blobs/e1");
  EXPECT_EQ(fs::read_symlink(c.snapshot(kCommit) / "sub/dir/x.json"), "../../../../blobs/e1");
  // Moving the whole cache keeps the links valid.
  fs::rename(dir_, dir_.string() + "_moved");
  std::ifstream in(fs::path(dir_.string() + "_moved") / "models--org--m/snapshots" / kCommit /
                   "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "{}");
  fs::remove_all(dir_.string() + "_moved");
}

TEST_F(RepoCacheTest, OnlyCompleteSnapshotsAreFound) {
  RepoCache c(dir_.string(), "org/m");
  EXPECT_FALSE(c.local_snapshot("main").is_ok());
  ASSERT_TRUE(c.write_ref("main", kCommit).is_ok());
  blob(c, "cfg", "{}");
  blob(c, "tok", "{}");
  blob(c, "idx", R"({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})");
  blob(c, "w1", "x");
  for (auto [name, etag] : {std::pair{"config.json", "cfg"},
                            {"tokenizer.json", "tok"},
                            {"model.safetensors.index.json", "idx"},
                            {"model-1.safetensors", "w1"}}) {
    ASSERT_TRUE(c.link(kCommit, name, etag).is_ok());
  }
  auto partial = c.local_snapshot("main");
  ASSERT_FALSE(partial.is_ok());
  EXPECT_NE(partial.status().message().find("model-2.safetensors"), std::string::npos);
  // A link to a blob that is not there (a cut download of another tool) is not a file either.
  ASSERT_TRUE(c.link(kCommit, "model-2.safetensors", "w2").is_ok());
  EXPECT_FALSE(c.local_snapshot("main").is_ok());
  blob(c, "w2", "y");
  auto full = c.local_snapshot("main");
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(*full, c.snapshot(kCommit));
  EXPECT_TRUE(c.local_snapshot(kCommit).is_ok());  // a commit needs no ref
  EXPECT_FALSE(c.local_snapshot("v2").is_ok());
}

}  // namespace
}  // namespace recur::hub
