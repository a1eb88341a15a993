// The disk tier against a real directory: write-through and load, a restart's index, corrupt,
// truncated and torn files (detected, counted, deleted, never restored), isolation of models,
// tenants and sessions, supersede, retire, the byte budget, reset, and replicas sharing the
// directory (hand-over and concurrent writers of one key).
#include "cache/disk_tier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "cache/disk_io.h"
#include "disk_test_util.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::bytes_snap;
using testing::BytesCodec;
using testing::concat;
using testing::entry_files;
using testing::iota_tokens;
using testing::key_for;
using testing::load;
using testing::open_tier;
using testing::ScratchDir;
using testing::store_policy;
using V = std::vector<Token>;

TEST(DiskFormat, HeaderRoundTripsAndEveryFieldIsChecked) {
  DiskHeader h{.model = 1,
               .partition = 2,
               .session = 3,
               .kind = DiskKind::kPrefix,
               .origin = Origin::kWarmup,
               .truncatable = true,
               .n_tokens = 10,
               .payload_bytes = 100,
               .tokens_hash = 4,
               .payload_hash = 5,
               .created_unix_ns = 6};
  auto bytes = encode_disk_header(h);
  auto back = decode_disk_header(bytes, h.file_bytes());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, h);
  // One byte changed anywhere in the header fails its checksum (or the magic).
  for (std::size_t i = 0; i < kDiskHeaderBytes; i += 7) {
    auto bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_FALSE(decode_disk_header(bad, h.file_bytes()).is_ok()) << "byte " << i;
  }
  auto short_file = decode_disk_header(bytes, h.file_bytes() - 1);
  ASSERT_FALSE(short_file.is_ok());
  EXPECT_NE(short_file.status().message().find("truncated"), std::string::npos);
  EXPECT_FALSE(decode_disk_header(std::span(bytes).first(64), h.file_bytes()).is_ok());
}

TEST(DiskTier, WritesThroughAndLoadsTheLongestPrefixOfTheSession) {
  ScratchDir dir;
  auto tier = open_tier(dir.path());
  const CacheKey k = key_for("s1");
  const V t1 = iota_tokens(20);
  const V t2 = concat(t1, iota_tokens(10, 100));
  auto s1 = bytes_snap(1000, t1.size(), 1);
  tier->store(k, Origin::kCompletion, t1, s1);
  tier->store(k, Origin::kBoundary, t2, bytes_snap(1500, t2.size(), 2));
  tier->flush();
  EXPECT_EQ(tier->stats().writes, 2);
  EXPECT_EQ(tier->stats().entries, 2);

  auto l = load(*tier, k, concat(t2, V{7, 8}));
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_EQ(l->hit()->n_tokens_usable, 30);
  EXPECT_EQ(l->hit()->origin, Origin::kBoundary);
  EXPECT_EQ(l->hit()->tokens, t2);
  EXPECT_EQ(bytes_of(l->hit()->snapshot), bytes_snap(1500, 30, 2)->bytes());
  // Nothing better than what RAM already has: no read.
  auto none = load(*tier, k, concat(t2, V{7}), false, /*better_than=*/30);
  EXPECT_FALSE(none->hit().has_value());
  EXPECT_EQ(none->miss(), "none_longer");
  // Another session, tenant or model directory sees none of it.
  EXPECT_FALSE(load(*tier, key_for("s2"), concat(t2, V{7}))->hit().has_value());
  EXPECT_FALSE(load(*tier, key_for("s1", "t2"), concat(t2, V{7}))->hit().has_value());
  auto other_model = open_tier(dir.path(), 1 << 24, /*signature=*/43);
  EXPECT_EQ(other_model->stats().indexed_at_start, 0);
  EXPECT_FALSE(load(*other_model, k, concat(t2, V{7}))->hit().has_value());
  const DiskStats s = tier->stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.tokens_reused, 30);
  EXPECT_GT(s.read_ns_total, 0);
}

TEST(DiskTier, ALoadRightAfterAStoreFindsItWrittenOrNot) {
  ScratchDir dir;
  auto tier = open_tier(dir.path());
  const V t = iota_tokens(30);
  for (int i = 0; i < 8; ++i) {
    const CacheKey k = key_for("s" + std::to_string(i));
    tier->store(k, Origin::kWarmup, t, bytes_snap(1 << 14, t.size(), i));
    auto l = load(*tier, k, concat(t, V{1}));
    ASSERT_TRUE(l->hit().has_value()) << i;
    EXPECT_EQ(bytes_of(l->hit()->snapshot), bytes_snap(1 << 14, 30, i)->bytes());
  }
  EXPECT_EQ(tier->stats().hits, 8);
}

TEST(DiskTier, ARestartIndexesTheEntriesAndRestoresTheSameBytes) {
  ScratchDir dir;
  const CacheKey k = key_for("s1");
  const V t = iota_tokens(40);
  {
    auto tier = open_tier(dir.path());
    tier->store(k, Origin::kWarmup, t, bytes_snap(4096, t.size(), 9));
  }  // the destructor writes what is queued
  auto tier = open_tier(dir.path());
  EXPECT_EQ(tier->stats().indexed_at_start, 1);
  auto l = load(*tier, k, concat(t, V{1}));
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_EQ(bytes_of(l->hit()->snapshot), bytes_snap(4096, 40, 9)->bytes());
  EXPECT_EQ(l->hit()->origin, Origin::kWarmup);
}

class DiskCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tier = open_tier(dir_.path());
    tier->store(key_for("a"), Origin::kCompletion, t_, bytes_snap(5000, t_.size(), 1));
    tier->flush();
    files_ = entry_files(dir_.path());
    ASSERT_EQ(files_.size(), 1u);
  }
  ScratchDir dir_;
  V t_ = iota_tokens(32);
  std::vector<fs::path> files_;
};

// A payload larger than a read chunk: restored byte for byte, and a flipped byte in any chunk
// (the first, a middle one, the short last one) is caught by the checksum.
TEST(DiskTier, APayloadOfSeveralChunksIsRestoredWholeAndEveryChunkIsChecked) {
  const std::size_t n = 2 * kDiskReadChunkBytes + 12345;
  std::vector<std::uint8_t> bytes(n);
  // Not periodic in any chunk size: chunks read out of order or twice would not compare equal.
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>((i * i + i / 7) >> 3);
  const V t = iota_tokens(24);
  const CacheKey k = key_for("chunks");
  for (const std::size_t flip : {std::size_t{0}, kDiskReadChunkBytes + 99, n - 1}) {
    SCOPED_TRACE(flip);
    ScratchDir dir;
    {
      auto tier = open_tier(dir.path());
      tier->store(k, Origin::kCompletion, t,
                  std::make_shared<testing::BytesSnapshot>(bytes, 24, false));
    }
    {
      auto tier = open_tier(dir.path());
      auto l = load(*tier, k, concat(t, V{1}));
      ASSERT_TRUE(l->hit().has_value()) << l->miss();
      EXPECT_TRUE(bytes_of(l->hit()->snapshot) == bytes);
    }
    const std::vector<fs::path> files = entry_files(dir.path());
    ASSERT_EQ(files.size(), 1u);
    {
      std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(files[0]) - n + flip));
      f.put(static_cast<char>(bytes[flip] ^ 0x10));
    }
    auto tier = open_tier(dir.path());
    auto l = load(*tier, k, concat(t, V{1}));
    EXPECT_FALSE(l->hit().has_value());
    EXPECT_EQ(l->miss(), "corrupt");
    EXPECT_EQ(tier->stats().corrupt_dropped, 1);
    EXPECT_FALSE(fs::exists(files[0]));
  }
}

TEST_F(DiskCorruption, ATruncatedFileIsDroppedAtStartup) {
  fs::resize_file(files_[0], fs::file_size(files_[0]) - 100);
  auto tier = open_tier(dir_.path());
  EXPECT_EQ(tier->stats().corrupt_dropped, 1);
  EXPECT_EQ(tier->stats().entries, 0);
  EXPECT_FALSE(fs::exists(files_[0]));
  EXPECT_FALSE(load(*tier, key_for("a"), concat(t_, V{1}))->hit().has_value());
}

TEST_F(DiskCorruption, ACorruptPayloadIsDroppedWhenReadAndNeverRestored) {
  {
    std::fstream f(files_[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x5a');
  }
  auto tier = open_tier(dir_.path());
  EXPECT_EQ(tier->stats().entries, 1);  // payloads are checked when read, not at startup
  auto l = load(*tier, key_for("a"), concat(t_, V{1}));
  EXPECT_FALSE(l->hit().has_value());
  EXPECT_EQ(l->miss(), "corrupt");
  EXPECT_EQ(tier->stats().corrupt_dropped, 1);
  EXPECT_EQ(tier->stats().entries, 0);
  EXPECT_FALSE(fs::exists(files_[0]));
}

TEST_F(DiskCorruption, GarbageAndAWrongNameAreDropped) {
  fs::path garbage = files_[0].parent_path() / "s0-12-00000000deadbeef.rpc";
  std::ofstream(garbage) << "not a cache entry at all, but long enough to hold a header? no";
  fs::path renamed = files_[0].parent_path() / "s0-99-0000000000000001.rpc";
  fs::copy_file(files_[0], renamed);
  auto tier = open_tier(dir_.path());
  EXPECT_EQ(tier->stats().corrupt_dropped, 2);
  EXPECT_EQ(tier->stats().entries, 1);
  EXPECT_FALSE(fs::exists(garbage));
  EXPECT_FALSE(fs::exists(renamed));
}

TEST_F(DiskCorruption, ADeadWritersTempFileIsDeletedAndALiveOnesIsKept) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  // A pid that cannot be running: above the kernel's pid_max (4194304 at most).
  fs::path dead = files_[0].parent_path() / (std::string(".tmp-") + host + "-99999999-3");
  std::ofstream(dead) << "half a write";
  fs::path live = files_[0].parent_path() /
                  (std::string(".tmp-") + host + "-" + std::to_string(::getppid()) + "-3");
  std::ofstream(live) << "a write in progress";
  auto tier = open_tier(dir_.path());
  EXPECT_EQ(tier->stats().temps_dropped, 1);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_EQ(tier->stats().entries, 1);
}

TEST(DiskWriter, ARunningJobCountsAsPendingUntilItIsDone) {
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  DiskWriter writer(1 << 20, [&](DiskJob&) {
    started.set_value();
    released.wait();
  });
  writer.enqueue(DiskJob{.kind = DiskJob::Kind::kRemove, .rel_path = "p/s/x.rpc"});
  started.get_future().wait();
  EXPECT_EQ(writer.stats().pending_jobs, 1);  // running, no longer queued
  release.set_value();
  writer.flush();
  EXPECT_EQ(writer.stats().pending_jobs, 0);
}

TEST(DiskTier, SupersedeRetireBudgetAndClearDeleteFiles) {
  ScratchDir dir;
  const V t1 = iota_tokens(16);
  const V t2 = concat(t1, iota_tokens(16, 50));
  // Each file: 128-byte header + 4 bytes a token + 1000 payload bytes.
  auto tier = open_tier(dir.path(), /*capacity=*/2 * (128 + 32 * 4 + 1000));
  const CacheKey a = key_for("a");
  tier->store(a, Origin::kCompletion, t1, bytes_snap(1000, t1.size(), 1));
  tier->store(a, Origin::kCompletion, t2, bytes_snap(1000, t2.size(), 2));
  tier->flush();
  EXPECT_EQ(tier->stats().supersedes, 1);
  EXPECT_EQ(entry_files(dir.path()).size(), 1u);
  tier->retire(a, Origin::kCompletion, t2, false);
  tier->flush();
  EXPECT_EQ(entry_files(dir.path()).size(), 0u);
  for (int i = 0; i < 3; ++i) {
    tier->store(key_for("b" + std::to_string(i)), Origin::kCompletion, t2,
                bytes_snap(1000, t2.size(), i));
  }
  tier->flush();
  EXPECT_EQ(tier->stats().evictions, 1);
  EXPECT_EQ(tier->stats().entries, 2);
  EXPECT_EQ(entry_files(dir.path()).size(), 2u);
  EXPECT_FALSE(load(*tier, key_for("b0"), concat(t2, V{1}))->hit().has_value());
  EXPECT_TRUE(load(*tier, key_for("b2"), concat(t2, V{1}))->hit().has_value());
  // Larger than the whole budget: never written.
  tier->store(a, Origin::kWarmup, t2, bytes_snap(5000, t2.size(), 1));
  EXPECT_EQ(tier->stats().writes_oversized, 1);
  const ClearResult freed = tier->clear();
  EXPECT_EQ(freed.freed_entries, 2);
  EXPECT_EQ(entry_files(dir.path()).size(), 0u);
  EXPECT_EQ(tier->stats().entries, 0);
}

TEST(DiskTier, PrefixKindSharesTheLongestCommonBlockAcrossSessions) {
  ScratchDir dir;
  auto tier = open_tier(dir.path());
  const V shared = iota_tokens(40);
  tier->store(key_for("a"), Origin::kCompletion, concat(shared, V{900, 901}),
              bytes_snap(800, 42, 1, /*truncatable=*/true));
  tier->flush();
  auto l = load(*tier, key_for("b"), concat(shared, V{5, 6, 7}), true, 0, store_policy(4, 16));
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_EQ(l->hit()->n_tokens_usable, 32);  // 40 common tokens, whole blocks of 16
  EXPECT_EQ(l->hit()->tokens.size(), 42u);
}

TEST(DiskTier, AReplicaFindsWhatAnotherWroteAfterItStarted) {
  ScratchDir dir;
  auto a = open_tier(dir.path());
  auto b = open_tier(dir.path());
  const V t = iota_tokens(24);
  a->store(key_for("moving"), Origin::kWarmup, t, bytes_snap(2048, t.size(), 5));
  a->flush();
  auto l = load(*b, key_for("moving"), concat(t, V{3}));
  ASSERT_TRUE(l->hit().has_value());
  EXPECT_EQ(bytes_of(l->hit()->snapshot), bytes_snap(2048, 24, 5)->bytes());
  EXPECT_EQ(b->stats().discovered, 1);
  // A deletes it (retired): B's index notices the file is gone.
  a->retire(key_for("moving"), Origin::kWarmup, t, false);
  a->flush();
  EXPECT_FALSE(load(*b, key_for("moving"), concat(t, V{3}))->hit().has_value());
  EXPECT_EQ(b->stats().vanished, 1);
}

TEST(DiskTier, ConcurrentWritersOfOneKeyLeaveOneCompleteFile) {
  ScratchDir dir;
  auto a = open_tier(dir.path());
  auto b = open_tier(dir.path());
  const V t = iota_tokens(64);
  const CacheKey k = key_for("contended");
  // Both replicas write the same key over and over, each with its own bytes; readers meanwhile.
  std::atomic<bool> stop{false};
  std::int64_t good_reads = 0;
  std::thread reader([&] {
    auto c = open_tier(dir.path());
    while (!stop.load()) {
      auto l = load(*c, k, concat(t, V{1}));
      if (!l->hit()) continue;
      const auto& got = bytes_of(l->hit()->snapshot);
      EXPECT_TRUE(got == bytes_snap(1 << 16, 64, 1)->bytes() ||
                  got == bytes_snap(1 << 16, 64, 2)->bytes());
      ++good_reads;
    }
    EXPECT_EQ(c->stats().corrupt_dropped, 0);
  });
  std::thread wa([&] {
    for (int i = 0; i < 20; ++i) {
      a->store(k, Origin::kCompletion, t, bytes_snap(1 << 16, 64, 1));
      a->flush();  // one rename each, rather than coalesced in the queue
    }
  });
  std::thread wb([&] {
    for (int i = 0; i < 20; ++i) {
      b->store(k, Origin::kCompletion, t, bytes_snap(1 << 16, 64, 2));
      b->flush();
    }
  });
  wa.join();
  wb.join();
  stop.store(true);
  reader.join();
  EXPECT_GT(good_reads, 0);
  EXPECT_EQ(a->stats().writes + b->stats().writes, 40);
  EXPECT_EQ(a->stats().write_failures + b->stats().write_failures, 0);
  ASSERT_EQ(entry_files(dir.path()).size(), 1u);
  // No temp file is left behind.
  std::int64_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  auto fresh = open_tier(dir.path());
  EXPECT_EQ(fresh->stats().corrupt_dropped, 0);
  EXPECT_TRUE(load(*fresh, k, concat(t, V{1}))->hit().has_value());
}

TEST(DiskTier, AnUnwritableDirectoryIsRefusedWithItsName) {
  ScratchDir dir;
  const std::string file = dir.path() + "/plain-file";
  std::ofstream(file) << "x";
  auto t = DiskTier::open({.dir = file, .capacity_bytes = 1 << 20}, std::make_shared<BytesCodec>());
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find(file), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace recur::cache
