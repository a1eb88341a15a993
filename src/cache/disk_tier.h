// The prompt cache's second tier: entries on disk under a byte budget of their own, shared by
// restarts and by replicas that mount the same directory. Every admitted snapshot is written
// through (off the engine thread); a lookup that may find more on disk than in RAM loads the
// file on the tier's reader thread while the engine keeps stepping. Crash-safe writes, checked
// reads (format: disk_format.h). Rules and guarantees: docs/prompt-cache.md. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cache/disk_index.h"
#include "cache/disk_writer.h"
#include "cache/keys.h"
#include "cache/snapshot_codec.h"
#include "cache/stats.h"
#include "cache/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace recur::cache {

struct DiskPolicy {
  std::string dir;                  // --prompt-cache-dir
  std::int64_t capacity_bytes = 0;  // --prompt-cache-disk-capacity-bytes
  // Snapshots waiting for the writer (held in memory meanwhile); beyond it the oldest is dropped.
  std::int64_t max_pending_write_bytes = std::int64_t{512} << 20;
  // A temp file of another host (or of a live process here) this old is a dead writer's.
  Nanos stale_temp_ns = Nanos{600} * 1'000'000'000;
};

// Counters only grow (clear() does not reset them); entries/bytes are the current index.
struct DiskStats {
  bool enabled = false;
  std::string dir;  // the model directory this server reads and writes
  std::int64_t entries = 0;
  std::int64_t bytes = 0;
  std::int64_t capacity_bytes = 0;
  std::int64_t indexed_at_start = 0;
  std::int64_t discovered = 0;  // files another writer (replica) made, found by a lookup
  std::int64_t writes = 0;
  std::int64_t write_bytes = 0;
  std::int64_t write_failures = 0;
  std::int64_t writes_dropped = 0;    // pending writes dropped at max_pending_write_bytes
  std::int64_t writes_coalesced = 0;  // pending writes replaced by a newer one of the same file
  std::int64_t writes_cancelled = 0;  // pending writes made redundant before they ran
  std::int64_t writes_oversized = 0;  // entries larger than the whole disk budget
  std::int64_t pending_writes = 0;
  std::int64_t pending_write_bytes = 0;
  std::int64_t lookups = 0;      // loads asked for (RAM had less than the disk might)
  std::int64_t hits = 0;         // loads that found a longer prefix (read, or not yet written)
  std::int64_t hits_shared = 0;  // of which a tenant's shared system-prompt entry (origin shared)
  std::int64_t unwritten_hits = 0;  // of which served from a write still queued
  std::int64_t tokens_reused = 0;
  std::int64_t read_bytes = 0;
  std::int64_t read_ns_total = 0;  // reading, checking and decoding hits
  std::int64_t read_ns_max = 0;
  std::int64_t corrupt_dropped = 0;  // torn, truncated or corrupt files detected and deleted
  std::int64_t temps_dropped = 0;    // temp files of writers that died (kill -9, power loss)
  std::int64_t vanished = 0;         // indexed files another replica deleted
  std::int64_t read_failures = 0;    // I/O errors on read (the file is kept)
  std::int64_t evictions = 0;        // deleted for the byte budget
  std::int64_t supersedes = 0;       // deleted because a newer snapshot made them redundant
  std::int64_t cleared_entries = 0;
};

// A loaded entry.
struct DiskHit {
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<Token> tokens;  // the entry's whole token vector
  Origin origin = Origin::kCompletion;
  std::int64_t n_tokens_usable = 0;
};

// One asynchronous load: the engine polls done() between steps. Thread-safe.
class DiskLoad {
 public:
  explicit DiskLoad(std::function<void()> on_done) : on_done_(std::move(on_done)) {}
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Once done(): the entry, or nullopt with miss() saying why (none_longer, corrupt, ...).
  const std::optional<DiskHit>& hit() const { return hit_; }
  const std::string& miss() const { return miss_; }
  // After this returns the completion callback is never called (the engine is going away).
  void cancel();

 private:
  friend class DiskTier;
  void complete(std::optional<DiskHit> hit, std::string miss);

  std::mutex mu_;  // orders cancel() against the callback
  std::function<void()> on_done_;
  std::atomic<bool> done_{false};
  std::optional<DiskHit> hit_;
  std::string miss_;
};

class DiskTier {
 public:
  // Creates DIR/v1-<model>/ if needed, indexes its entries (headers and tokens; payloads are
  // checked when read), deletes corrupt files and dead writers' temp files, and enforces the
  // budget. Errors name the directory and what the system refused.
  static Result<std::unique_ptr<DiskTier>> open(const DiskPolicy& policy,
                                                std::shared_ptr<const SnapshotCodec> codec);
  ~DiskTier();  // writes what is queued, then stops
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Queues the write of an admitted entry; returns at once.
  void store(const CacheKey& key, Origin origin, TokenSpan tokens,
             std::shared_ptr<const Snapshot> snapshot);
  // The entry of exactly this key, origin and tokens is redundant: its file goes.
  void retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable);
  // Starts loading the best entry usable for more than `better_than` prompt tokens (the RAM
  // store's best), by `policy`'s rules; `on_done` runs on the reader thread when it is done.
  std::shared_ptr<DiskLoad> load(const CacheKey& key, TokenSpan prompt, bool truncatable,
                                 const StorePolicy& policy, std::int64_t better_than,
                                 std::function<void()> on_done);
  // Deletes every entry of this model directory (every tenant's); pending writes are dropped.
  ClearResult clear();
  DiskStats stats() const;
  // Waits until every queued write has run (tests, benchmarks).
  void flush() { writer_->flush(); }
  const std::string& root() const { return root_; }

 private:
  struct PendingLoad {
    DiskQuery query;
    std::shared_ptr<DiskLoad> load;
  };
  DiskTier(const DiskPolicy& policy, std::shared_ptr<const SnapshotCodec> codec, std::string root);
  void index_existing();
  void run_job(DiskJob& job);
  void read_loop();
  std::optional<DiskHit> serve(const DiskQuery& query, std::string& miss);
  std::optional<DiskHit> unwritten_hit(const DiskQuery& query);
  void refresh_session(std::uint64_t partition, std::uint64_t session);
  // Drops a bad file: from the index, from the disk, into the counters.
  void drop_file(const std::string& rel_path, const Status& why);
  // Victims of the byte budget, taken out of the index (the caller unlinks them).
  std::vector<std::string> over_budget() RECUR_REQUIRES(mu_);
  void unlink_all(const std::vector<std::string>& rel_paths);

  const DiskPolicy policy_;
  const std::shared_ptr<const SnapshotCodec> codec_;
  const std::string root_;  // DIR/v1-<model>
  std::atomic<std::uint64_t> temp_seq_{0};

  mutable Mutex mu_;
  DiskIndex index_ RECUR_GUARDED_BY(mu_);
  DiskStats stats_ RECUR_GUARDED_BY(mu_);

  Mutex read_mu_;
  std::condition_variable_any read_wake_;
  std::deque<PendingLoad> reads_ RECUR_GUARDED_BY(read_mu_);
  bool stopping_ RECUR_GUARDED_BY(read_mu_) = false;
  std::thread reader_;
  std::unique_ptr<DiskWriter> writer_;  // last: its destructor runs the queue, which uses the rest
};

}  // namespace recur::cache
