// The disk tier's writer thread: a queue of file jobs (write an entry, remove one) run in order
// off the engine thread, so storing a snapshot never waits for the disk. Pending writes hold
// their snapshots (shared, immutable) and are bounded in bytes: beyond the bound the oldest
// pending write is dropped and counted. A newer write of the same file replaces a pending one.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/disk_format.h"
#include "cache/snapshot.h"
#include "cache/thread_annotations.h"

namespace recur::cache {

struct DiskJob {
  enum class Kind : std::uint8_t { kWrite, kRemove };
  Kind kind = Kind::kWrite;
  std::string rel_path;
  DiskHeader header;                         // kWrite (payload_hash is filled by the runner)
  std::vector<Token> tokens;                 // kWrite
  std::shared_ptr<const Snapshot> snapshot;  // kWrite: kept alive until written
  std::uint64_t generation = 0;              // DiskWriter::generation() when queued
};

struct DiskWriterStats {
  std::int64_t pending_jobs = 0;   // queued or running
  std::int64_t pending_bytes = 0;  // snapshot bytes of the queued writes
  std::int64_t dropped = 0;        // pending writes dropped to stay under the byte bound
  std::int64_t coalesced = 0;      // pending writes replaced by a newer write of the same file
  std::int64_t cancelled = 0;      // pending writes cancelled (retired or cleared before written)
};

class DiskWriter {
 public:
  // `run` executes one job on the writer thread (DiskTier writes the file and indexes it).
  DiskWriter(std::int64_t max_pending_bytes, std::function<void(DiskJob&)> run);
  ~DiskWriter() { stop(); }
  DiskWriter(const DiskWriter&) = delete;
  DiskWriter& operator=(const DiskWriter&) = delete;

  // Runs what is queued (a graceful shutdown keeps what was stored), then joins the thread;
  // later jobs are dropped. Idempotent.
  void stop() RECUR_EXCLUDES(mu_);

  void enqueue(DiskJob job) RECUR_EXCLUDES(mu_);
  // Drops a pending write of this file; returns whether one was pending.
  bool cancel(const std::string& rel_path) RECUR_EXCLUDES(mu_);
  // Drops every pending job and starts a new generation: a job already running sees that its
  // generation is over (DiskTier::clear deletes what it writes).
  void cancel_all() RECUR_EXCLUDES(mu_);
  std::uint64_t generation() const RECUR_EXCLUDES(mu_);
  // Copies of the writes of this partition not yet on disk (queued, or running until indexed):
  // a lookup right after a store finds the entry here rather than miss it by a few milliseconds.
  std::vector<DiskJob> unwritten(std::uint64_t partition) const RECUR_EXCLUDES(mu_);
  // Waits until every queued job has run.
  void flush() RECUR_EXCLUDES(mu_);
  DiskWriterStats stats() const RECUR_EXCLUDES(mu_);

 private:
  void loop();
  void drop(std::list<DiskJob>::iterator it) RECUR_REQUIRES(mu_);

  const std::int64_t max_pending_bytes_;
  const std::function<void(DiskJob&)> run_;
  mutable Mutex mu_;
  std::condition_variable_any wake_;
  std::condition_variable_any idle_;
  std::list<DiskJob> queue_ RECUR_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::list<DiskJob>::iterator> pending_writes_
      RECUR_GUARDED_BY(mu_);
  bool running_job_ RECUR_GUARDED_BY(mu_) = false;
  std::optional<DiskJob> running_write_ RECUR_GUARDED_BY(mu_);  // a copy, for unwritten()
  bool stopping_ RECUR_GUARDED_BY(mu_) = false;
  std::uint64_t generation_ RECUR_GUARDED_BY(mu_) = 0;
  DiskWriterStats stats_ RECUR_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace recur::cache
