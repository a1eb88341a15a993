#include "cache/disk_writer.h"

#include "util/check.h"

namespace recur::cache {
namespace {

std::int64_t job_bytes(const DiskJob& job) {
  return job.kind == DiskJob::Kind::kWrite && job.snapshot != nullptr
             ? static_cast<std::int64_t>(job.snapshot->byte_size())
             : 0;
}

}  // namespace

DiskWriter::DiskWriter(std::int64_t max_pending_bytes, std::function<void(DiskJob&)> run)
    : max_pending_bytes_(max_pending_bytes), run_(std::move(run)) {
  RECUR_CHECK(max_pending_bytes_ > 0);
  thread_ = std::thread([this] { loop(); });
}

void DiskWriter::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DiskWriter::drop(std::list<DiskJob>::iterator it) {
  if (it->kind == DiskJob::Kind::kWrite) pending_writes_.erase(it->rel_path);
  stats_.pending_bytes -= job_bytes(*it);
  queue_.erase(it);
}

void DiskWriter::enqueue(DiskJob job) {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    job.generation = generation_;
    if (job.kind == DiskJob::Kind::kWrite) {
      if (auto it = pending_writes_.find(job.rel_path); it != pending_writes_.end()) {
        drop(it->second);
        ++stats_.coalesced;
      }
      const std::int64_t bytes = job_bytes(job);
      // The newest snapshot of a conversation is the one worth keeping: the oldest goes first.
      for (auto it = queue_.begin();
           it != queue_.end() && stats_.pending_bytes + bytes > max_pending_bytes_;) {
        auto next = std::next(it);
        if (it->kind == DiskJob::Kind::kWrite) {
          drop(it);
          ++stats_.dropped;
        }
        it = next;
      }
      if (stats_.pending_bytes + bytes > max_pending_bytes_) {
        ++stats_.dropped;  // larger than the whole bound by itself
        return;
      }
      stats_.pending_bytes += bytes;
      queue_.push_back(std::move(job));
      pending_writes_[queue_.back().rel_path] = std::prev(queue_.end());
    } else {
      queue_.push_back(std::move(job));
    }
  }
  wake_.notify_one();
}

bool DiskWriter::cancel(const std::string& rel_path) {
  MutexLock lock(mu_);
  auto it = pending_writes_.find(rel_path);
  if (it == pending_writes_.end()) return false;
  drop(it->second);
  ++stats_.cancelled;
  idle_.notify_all();
  return true;
}

void DiskWriter::cancel_all() {
  MutexLock lock(mu_);
  for (const DiskJob& job : queue_) {
    if (job.kind == DiskJob::Kind::kWrite) ++stats_.cancelled;
  }
  queue_.clear();
  pending_writes_.clear();
  stats_.pending_bytes = 0;
  ++generation_;
  idle_.notify_all();
}

std::uint64_t DiskWriter::generation() const {
  MutexLock lock(mu_);
  return generation_;
}

void DiskWriter::flush() {
  MutexLock lock(mu_);
  while (!queue_.empty() || running_job_) idle_.wait(mu_);
}

std::vector<DiskJob> DiskWriter::unwritten(std::uint64_t partition) const {
  MutexLock lock(mu_);
  std::vector<DiskJob> out;
  for (const DiskJob& job : queue_) {
    if (job.kind == DiskJob::Kind::kWrite && job.header.partition == partition) out.push_back(job);
  }
  if (running_write_ && running_write_->header.partition == partition)
    out.push_back(*running_write_);
  return out;
}

DiskWriterStats DiskWriter::stats() const {
  MutexLock lock(mu_);
  DiskWriterStats s = stats_;
  // The running job counts: a caller waiting for "nothing pending" (a test, a replica about to
  // read the file) must not see zero while the last write is still in progress.
  s.pending_jobs = static_cast<std::int64_t>(queue_.size()) + (running_job_ ? 1 : 0);
  return s;
}

void DiskWriter::loop() {
  for (;;) {
    DiskJob job;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stopping_) wake_.wait(mu_);
      if (queue_.empty()) return;  // stopping, and everything queued has run
      job = std::move(queue_.front());
      queue_.pop_front();
      if (job.kind == DiskJob::Kind::kWrite) pending_writes_.erase(job.rel_path);
      stats_.pending_bytes -= job_bytes(job);
      running_job_ = true;
      if (job.kind == DiskJob::Kind::kWrite) running_write_ = job;
    }
    run_(job);
    job.snapshot.reset();  // the memory goes back before the next job starts
    {
      MutexLock lock(mu_);
      running_job_ = false;
      running_write_.reset();
    }
    idle_.notify_all();
  }
}

}  // namespace recur::cache
