// Disk-tier test helpers: a snapshot that holds real payload bytes and the codec that writes and
// rebuilds it (the same interface the engine implements for model states), and a scratch
// directory removed at the end of the test; a tier opened on it and a synchronous load.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "cache/disk_tier.h"
#include "cache/snapshot_codec.h"
#include "test_snapshot.h"

namespace recur::cache::testing {

class BytesSnapshot final : public Snapshot {
 public:
  BytesSnapshot(std::vector<std::uint8_t> bytes, std::int64_t n_tokens, bool truncatable)
      : bytes_(std::move(bytes)), n_tokens_(n_tokens), truncatable_(truncatable) {}
  std::size_t byte_size() const override { return bytes_.size(); }
  std::int64_t n_tokens() const override { return n_tokens_; }
  bool truncatable() const override { return truncatable_; }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::int64_t n_tokens_;
  bool truncatable_;
};

class BytesCodec final : public SnapshotCodec {
 public:
  explicit BytesCodec(std::uint64_t signature = 42) : signature_(signature) {}
  std::span<const std::uint8_t> payload(const Snapshot& s) const override {
    return static_cast<const BytesSnapshot&>(s).bytes();
  }
  Result<std::shared_ptr<const Snapshot>> decode(std::vector<std::uint8_t> payload,
                                                 std::int64_t n_tokens,
                                                 bool truncatable) const override {
    return std::shared_ptr<const Snapshot>(
        std::make_shared<BytesSnapshot>(std::move(payload), n_tokens, truncatable));
  }
  std::uint64_t model_signature() const override { return signature_; }

 private:
  std::uint64_t signature_;
};

// `n_bytes` bytes derived from `seed`, so two snapshots' payloads differ.
inline std::shared_ptr<const BytesSnapshot> bytes_snap(std::size_t n_bytes, std::size_t n_tokens,
                                                       int seed, bool truncatable = false) {
  std::vector<std::uint8_t> b(n_bytes);
  for (std::size_t i = 0; i < n_bytes; ++i) b[i] = static_cast<std::uint8_t>(i * 31 + seed * 7);
  return std::make_shared<BytesSnapshot>(std::move(b), static_cast<std::int64_t>(n_tokens),
                                         truncatable);
}

inline const std::vector<std::uint8_t>& bytes_of(const std::shared_ptr<const Snapshot>& s) {
  return static_cast<const BytesSnapshot&>(*s).bytes();
}

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "recur-disk-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline StorePolicy store_policy(std::int64_t min_prefix = 4, std::int64_t block = 1) {
  return {.enabled = true,
          .capacity_bytes = 1 << 20,
          .max_entries = 100,
          .min_prefix_tokens = min_prefix,
          .block_tokens = block};
}

inline std::unique_ptr<DiskTier> open_tier(const std::string& dir, std::int64_t capacity = 1 << 24,
                                           std::uint64_t signature = 42) {
  auto t = DiskTier::open({.dir = dir, .capacity_bytes = capacity},
                          std::make_shared<BytesCodec>(signature));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(*t);
}

// Loads synchronously: waits for the completion callback.
inline std::shared_ptr<DiskLoad> load(DiskTier& tier, const CacheKey& key,
                                      const std::vector<Token>& prompt, bool truncatable = false,
                                      std::int64_t better_than = 0,
                                      const StorePolicy& policy = store_policy()) {
  std::promise<void> done;
  auto l = tier.load(key, prompt, truncatable, policy, better_than, [&] { done.set_value(); });
  done.get_future().wait();
  EXPECT_TRUE(l->done());
  return l;
}

// Every entry file under the directory.
inline std::vector<std::filesystem::path> entry_files(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".rpc") out.push_back(e.path());
  }
  return out;
}

}  // namespace recur::cache::testing
