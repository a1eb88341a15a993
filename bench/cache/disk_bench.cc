// The disk tier's cost on this machine: what a store costs the engine thread (queueing only),
// the writer's time per entry (write + fdatasync + rename), and a load of a Qwen3.5-0.8B-sized
// snapshot (19 MB: 18 Gated DeltaNet states of 1 MiB plus conv windows and 1,000 tokens of KV)
// with the page cache warm and cold, beside a plain sequential read of the same file cold.
// Usage: disk_bench [DIR] (default: a fresh directory under /tmp). Figures: docs/prompt-cache.md.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "cache/disk_tier.h"
#include "cache/snapshot_codec.h"

namespace recur::cache {
namespace {

using Steady = std::chrono::steady_clock;
constexpr std::size_t kPayloadBytes = 19'000'000;
constexpr std::size_t kTokens = 1000;

class BytesSnapshot final : public Snapshot {
 public:
  explicit BytesSnapshot(std::vector<std::uint8_t> b) : bytes_(std::move(b)) {}
  std::size_t byte_size() const override { return bytes_.size(); }
  std::int64_t n_tokens() const override { return kTokens; }
  bool truncatable() const override { return false; }
  std::vector<std::uint8_t> bytes_;
};

class BytesCodec final : public SnapshotCodec {
 public:
  std::span<const std::uint8_t> payload(const Snapshot& s) const override {
    return static_cast<const BytesSnapshot&>(s).bytes_;
  }
  Result<std::shared_ptr<const Snapshot>> decode(std::vector<std::uint8_t> p, std::int64_t,
                                                 bool) const override {
    return std::shared_ptr<const Snapshot>(std::make_shared<BytesSnapshot>(std::move(p)));
  }
  std::uint64_t model_signature() const override { return 7; }
};

double ms_since(Steady::time_point t) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t).count();
}

// The minimum is what the work itself costs; on a loaded machine the median adds waiting for a
// core (the reader thread has to be scheduled), so both are printed.
struct Summary {
  double min, median, p90, max;
};
Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v[v.size() * 9 / 10], v.back()};
}

CacheKey key(int i) {
  CacheKey k;
  k.bucket.model_id = "qwen3.5-0.8b";
  k.session = {SessionKind::kPromptCacheKey, "conversation-" + std::to_string(i)};
  return k;
}

double load_ms(DiskTier& tier, int i, const std::vector<Token>& prompt) {
  StorePolicy policy;
  std::promise<void> done;
  const auto t0 = Steady::now();
  auto l = tier.load(key(i), prompt, false, policy, 0, [&] { done.set_value(); });
  done.get_future().wait();
  const double ms = ms_since(t0);
  if (!l->hit()) std::fprintf(stderr, "load %d missed: %s\n", i, l->miss().c_str());
  return ms;
}

// Drops the file's pages from the page cache (written pages are clean after fdatasync).
void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

int run(const std::string& dir) {
  constexpr int kEntries = 8;
  auto opened = DiskTier::open({.dir = dir, .capacity_bytes = std::int64_t{1} << 33},
                               std::make_shared<BytesCodec>());
  if (!opened.is_ok()) {
    std::fprintf(stderr, "%s\n", opened.status().to_string().c_str());
    return 1;
  }
  DiskTier& tier = **opened;
  std::vector<Token> tokens(kTokens);
  for (std::size_t i = 0; i < kTokens; ++i) tokens[i] = static_cast<Token>(i * 7 % 151000);
  std::vector<Token> prompt = tokens;
  prompt.push_back(1);

  std::vector<double> enqueue;
  const auto writes_started = Steady::now();
  for (int i = 0; i < kEntries; ++i) {
    auto snap = std::make_shared<BytesSnapshot>(std::vector<std::uint8_t>(kPayloadBytes, i));
    const auto t0 = Steady::now();
    tier.store(key(i), Origin::kWarmup, tokens, std::move(snap));
    enqueue.push_back(ms_since(t0));
  }
  tier.flush();
  const double write_ms = ms_since(writes_started) / kEntries;

  std::vector<double> warm;
  for (int round = 0; round < 16; ++round) {
    for (int i = 0; i < kEntries; ++i) warm.push_back(load_ms(tier, i, prompt));
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tier.root())) {
    if (e.path().extension() == ".rpc") files.push_back(e.path().string());
  }
  std::vector<double> cold, plain;
  std::vector<std::uint8_t> buf(kPayloadBytes + (1 << 16));
  for (int i = 0; i < kEntries; ++i) {
    for (const std::string& f : files) drop_cache(f);
    cold.push_back(load_ms(tier, i, prompt));
  }
  for (const std::string& f : files) {
    drop_cache(f);
    const auto t0 = Steady::now();
    const int fd = ::open(f.c_str(), O_RDONLY);
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
    plain.push_back(ms_since(t0));
  }
  const Summary e = summarize(enqueue), w = summarize(warm), c = summarize(cold),
                p = summarize(plain);
  std::printf("payload %zu bytes, %zu tokens, %d entries in %s\n", kPayloadBytes, kTokens, kEntries,
              tier.root().c_str());
  std::printf("store (engine thread, queue only): median %.3f ms, max %.3f ms\n", e.median, e.max);
  std::printf("write (writer thread, write + fdatasync + rename): %.1f ms per entry (%.0f MB/s)\n",
              write_ms, kPayloadBytes / 1e3 / write_ms);
  std::printf("load, page cache warm: min %.2f ms, median %.2f ms, p90 %.2f ms, max %.2f ms\n",
              w.min, w.median, w.p90, w.max);
  std::printf("load, cold: min %.2f ms, median %.2f ms, p90 %.2f ms, max %.2f ms\n", c.min,
              c.median, c.p90, c.max);
  std::printf("plain sequential read of the file, cold: median %.2f ms (%.0f MB/s)\n", p.median,
              kPayloadBytes / 1e3 / p.median);
  return 0;
}

}  // namespace
}  // namespace recur::cache

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : std::string();
  if (dir.empty()) {
    std::string tmpl = "/tmp/recur-disk-bench-XXXXXX";
    dir = ::mkdtemp(tmpl.data());
  }
  const int rc = recur::cache::run(dir);
  if (argc <= 1) std::filesystem::remove_all(dir);
  return rc;
}
