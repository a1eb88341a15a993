#include "cache/disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "util/check.h"
#include "util/hash.h"
#include "util/log.h"

namespace recur::cache {
namespace {

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

DiskKind kind_for(bool truncatable) {
  return truncatable ? DiskKind::kPrefix : DiskKind::kSnapshot;
}

DiskHeader header_for(std::uint64_t model, const CacheKey& key, Origin origin, TokenSpan tokens,
                      bool truncatable) {
  return {.model = model,
          .partition = partition_hash(PartitionKey{key.tenant, key.bucket}),
          .session = session_hash(key.session),
          .kind = kind_for(truncatable),
          .origin = origin,
          .truncatable = truncatable,
          .n_tokens = static_cast<std::int64_t>(tokens.size()),
          .tokens_hash = tokens_hash(tokens)};
}

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error(StatusCode::kIo, "cannot create {}: {}", path, std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

void DiskLoad::cancel() {
  std::lock_guard lock(mu_);
  on_done_ = nullptr;
}

void DiskLoad::complete(std::optional<DiskHit> hit, std::string miss) {
  hit_ = std::move(hit);
  miss_ = std::move(miss);
  std::lock_guard lock(mu_);
  done_.store(true, std::memory_order_release);
  if (on_done_) on_done_();
}

Result<std::unique_ptr<DiskTier>> DiskTier::open(const DiskPolicy& policy,
                                                 std::shared_ptr<const SnapshotCodec> codec) {
  RECUR_CHECK(codec != nullptr && policy.capacity_bytes > 0 && !policy.dir.empty());
  RECUR_RETURN_IF_ERROR(make_dir(policy.dir));
  const std::string root = policy.dir + "/" + disk_model_dir(codec->model_signature());
  RECUR_RETURN_IF_ERROR(make_dir(root));
  // A directory we cannot write to would fail every store later, one log line each: refuse now.
  const std::string probe = fmt::format("{}/.probe-{}", root, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error(StatusCode::kIo, "cannot write in {}: {}", root, std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  std::unique_ptr<DiskTier> tier(new DiskTier(policy, std::move(codec), root));
  tier->index_existing();
  return tier;
}

DiskTier::DiskTier(const DiskPolicy& policy, std::shared_ptr<const SnapshotCodec> codec,
                   std::string root)
    : policy_(policy), codec_(std::move(codec)), root_(std::move(root)) {
  // Temp names carry host and pid; the nonce keeps two tiers of one process (tests, a second
  // model) from picking the same name.
  temp_seq_.store(static_cast<std::uint64_t>(std::random_device{}()) << 32);
  {
    MutexLock lock(mu_);
    stats_.enabled = true;
    stats_.dir = root_;
    stats_.capacity_bytes = policy_.capacity_bytes;
  }
  writer_ = std::make_unique<DiskWriter>(policy_.max_pending_write_bytes,
                                         [this](DiskJob& job) { run_job(job); });
  reader_ = std::thread([this] { read_loop(); });
}

DiskTier::~DiskTier() {
  {
    MutexLock lock(read_mu_);
    stopping_ = true;
  }
  read_wake_.notify_all();
  reader_.join();
  writer_->stop();  // runs the queued writes while everything they use still exists
}

void DiskTier::index_existing() {
  const auto started = std::chrono::steady_clock::now();
  DiskListing listing = list_entry_files(root_);
  std::int64_t temps = 0;
  for (const std::string& t : listing.temps) {
    if (is_abandoned_temp(root_, t, policy_.stale_temp_ns)) {
      log::warn("prompt cache disk: deleting {}/{}, left by a writer that died mid-write", root_,
                t);
      (void)remove_entry_file(root_, t);
      ++temps;
    }
  }
  std::vector<DiskEntryHead> heads;
  for (const std::string& rel : listing.entries) {
    Result<DiskEntryHead> head = read_entry_head(root_, rel);
    if (head.is_ok()) {
      heads.push_back(std::move(*head));
    } else if (head.status().code() == StatusCode::kDataLoss) {
      drop_file(rel, head.status());
    } else if (head.status().code() != StatusCode::kNotFound) {
      log::warn("prompt cache disk: skipping {}: {}", rel, head.status().message());
    }
  }
  // Oldest first, so the index's order of use starts as the files' order of writing.
  std::sort(heads.begin(), heads.end(),
            [](const DiskEntryHead& a, const DiskEntryHead& b) { return a.mtime_ns < b.mtime_ns; });
  std::vector<std::string> victims;
  {
    MutexLock lock(mu_);
    stats_.indexed_at_start = static_cast<std::int64_t>(heads.size());
    stats_.temps_dropped += temps;
    for (DiskEntryHead& h : heads) index_.add(std::move(h));
    victims = over_budget();
  }
  unlink_all(victims);
  const DiskStats s = stats();
  log::info(
      "prompt cache disk: {} holds {} entries ({} bytes) of this model, indexed in {} ms; "
      "dropped {} corrupt files and {} dead writers' temp files; budget {} bytes",
      root_, s.entries, s.bytes,
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                            started)
          .count(),
      s.corrupt_dropped, s.temps_dropped, policy_.capacity_bytes);
}

void DiskTier::drop_file(const std::string& rel_path, const Status& why) {
  log::warn("prompt cache disk: dropping a bad file: {}", why.message());
  {
    MutexLock lock(mu_);
    index_.remove(rel_path);
    ++stats_.corrupt_dropped;
  }
  (void)remove_entry_file(root_, rel_path);
}

std::vector<std::string> DiskTier::over_budget() {
  std::vector<std::string> victims;
  while (index_.bytes() > policy_.capacity_bytes) {
    std::optional<std::string> victim = index_.lru_victim();
    RECUR_CHECK(victim.has_value());
    index_.remove(*victim);
    victims.push_back(std::move(*victim));
  }
  stats_.evictions += static_cast<std::int64_t>(victims.size());
  return victims;
}

void DiskTier::unlink_all(const std::vector<std::string>& rel_paths) {
  for (const std::string& p : rel_paths) {
    Status s = remove_entry_file(root_, p);
    if (!s.is_ok()) log::warn("prompt cache disk: {}", s.message());
    prune_empty_dirs(root_, p);
  }
}

void DiskTier::store(const CacheKey& key, Origin origin, TokenSpan tokens,
                     std::shared_ptr<const Snapshot> snapshot) {
  DiskJob job{.kind = DiskJob::Kind::kWrite,
              .header = header_for(codec_->model_signature(), key, origin, tokens,
                                   snapshot->truncatable())};
  job.header.payload_bytes = static_cast<std::int64_t>(snapshot->byte_size());
  if (job.header.file_bytes() > policy_.capacity_bytes) {
    MutexLock lock(mu_);
    ++stats_.writes_oversized;
    return;
  }
  job.rel_path = disk_entry_path(job.header);
  job.tokens.assign(tokens.begin(), tokens.end());
  job.snapshot = std::move(snapshot);
  writer_->enqueue(std::move(job));
}

void DiskTier::retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable) {
  const DiskHeader h = header_for(codec_->model_signature(), key, origin, tokens, truncatable);
  DiskJob job{.kind = DiskJob::Kind::kRemove, .rel_path = disk_entry_path(h)};
  writer_->cancel(job.rel_path);
  // Queued even when the write was still pending: an older file of the same name may exist.
  writer_->enqueue(std::move(job));
}

void DiskTier::run_job(DiskJob& job) {
  if (job.kind == DiskJob::Kind::kRemove) {
    bool was_indexed = false;
    {
      MutexLock lock(mu_);
      was_indexed = index_.remove(job.rel_path).has_value();
      if (was_indexed) ++stats_.supersedes;
    }
    if (was_indexed) unlink_all({job.rel_path});
    return;
  }
  const std::span<const std::uint8_t> payload = codec_->payload(*job.snapshot);
  RECUR_CHECK(static_cast<std::int64_t>(payload.size()) == job.header.payload_bytes);
  job.header.payload_hash = hash64(payload.data(), payload.size());
  job.header.created_unix_ns = unix_now_ns();
  Status s = write_entry_file(root_, job.rel_path, job.header, job.tokens, payload,
                              temp_seq_.fetch_add(1));
  if (!s.is_ok()) {
    log::warn("prompt cache disk: write failed: {}", s.message());
    MutexLock lock(mu_);
    ++stats_.write_failures;
    return;
  }
  std::vector<std::string> doomed;
  bool cleared_meanwhile = false;
  {
    MutexLock lock(mu_);
    ++stats_.writes;
    stats_.write_bytes += job.header.file_bytes();
    // A reset that ran while this file was written must not leave it behind.
    cleared_meanwhile = job.generation != writer_->generation();
    if (!cleared_meanwhile) {
      doomed = index_.strict_prefixes(job.header, job.tokens);
      for (const std::string& p : doomed) index_.remove(p);
      stats_.supersedes += static_cast<std::int64_t>(doomed.size());
      index_.add(DiskEntryHead{.header = job.header,
                               .tokens = std::move(job.tokens),
                               .rel_path = job.rel_path,
                               .mtime_ns = job.header.created_unix_ns});
      std::vector<std::string> victims = over_budget();
      doomed.insert(doomed.end(), victims.begin(), victims.end());
    }
  }
  if (cleared_meanwhile) doomed.push_back(job.rel_path);
  unlink_all(doomed);
}

std::shared_ptr<DiskLoad> DiskTier::load(const CacheKey& key, TokenSpan prompt, bool truncatable,
                                         const StorePolicy& policy, std::int64_t better_than,
                                         std::function<void()> on_done) {
  auto load = std::make_shared<DiskLoad>(std::move(on_done));
  DiskQuery q{
      .partition = partition_hash(PartitionKey{key.tenant, key.bucket}),
      .session = session_hash(key.session),
      .shared_session = !truncatable && policy.origin_enabled[static_cast<int>(Origin::kShared)]
                            ? session_hash(SessionKey::shared())
                            : 0,
      .kind = kind_for(truncatable),
      .tokens = std::vector<Token>(prompt.begin(), prompt.end()),
      .better_than = better_than,
      .min_prefix_tokens = policy.min_prefix_tokens,
      .block_tokens = policy.block_tokens};
  {
    MutexLock lock(mu_);
    ++stats_.lookups;
  }
  {
    MutexLock lock(read_mu_);
    reads_.push_back({std::move(q), load});
  }
  read_wake_.notify_one();
  return load;
}

void DiskTier::read_loop() {
  for (;;) {
    PendingLoad p;
    {
      MutexLock lock(read_mu_);
      while (reads_.empty() && !stopping_) read_wake_.wait(read_mu_);
      if (stopping_) break;
      p = std::move(reads_.front());
      reads_.pop_front();
    }
    std::string miss;
    std::optional<DiskHit> hit = serve(p.query, miss);
    p.load->complete(std::move(hit), std::move(miss));
  }
  // Whoever waits on a load hears that it found nothing.
  MutexLock lock(read_mu_);
  for (PendingLoad& p : reads_) p.load->complete(std::nullopt, "stopping");
  reads_.clear();
}

void DiskTier::refresh_session(std::uint64_t partition, std::uint64_t session) {
  const DiskListing listing = list_session_files(root_, disk_session_dir(partition, session));
  std::vector<std::string> unknown;
  {
    MutexLock lock(mu_);
    std::vector<std::string> indexed = index_.paths_of_session(partition, session);
    for (const std::string& p : indexed) {
      if (std::find(listing.entries.begin(), listing.entries.end(), p) == listing.entries.end()) {
        index_.remove(p);  // another replica deleted it
        ++stats_.vanished;
      }
    }
    for (const std::string& p : listing.entries) {
      if (!index_.contains(p)) unknown.push_back(p);
    }
  }
  for (const std::string& p : unknown) {
    Result<DiskEntryHead> head = read_entry_head(root_, p);
    if (head.is_ok()) {
      MutexLock lock(mu_);
      if (!index_.contains(p)) {
        index_.add(std::move(*head));
        ++stats_.discovered;
      }
    } else if (head.status().code() == StatusCode::kDataLoss) {
      drop_file(p, head.status());
    }
  }
}

std::optional<DiskHit> DiskTier::unwritten_hit(const DiskQuery& query) {
  std::vector<DiskJob> jobs = writer_->unwritten(query.partition);
  if (jobs.empty()) return std::nullopt;
  DiskIndex pending;
  for (const DiskJob& j : jobs) {
    pending.add(DiskEntryHead{.header = j.header, .tokens = j.tokens, .rel_path = j.rel_path});
  }
  std::optional<DiskCandidate> c = pending.best(query);
  if (!c) return std::nullopt;
  {
    // The index may hold a file at least as good (an older write of a longer entry).
    MutexLock lock(mu_);
    std::optional<DiskCandidate> on_disk = index_.best(query);
    if (on_disk && on_disk->n_usable >= c->n_usable) return std::nullopt;
    ++stats_.hits;
    ++stats_.unwritten_hits;
    if (c->entry.header.origin == Origin::kShared) ++stats_.hits_shared;
    stats_.tokens_reused += c->n_usable;
  }
  auto job = std::find_if(jobs.begin(), jobs.end(),
                          [&](const DiskJob& j) { return j.rel_path == c->entry.rel_path; });
  return DiskHit{.snapshot = job->snapshot,
                 .tokens = std::move(job->tokens),
                 .origin = job->header.origin,
                 .n_tokens_usable = c->n_usable};
}

std::optional<DiskHit> DiskTier::serve(const DiskQuery& query, std::string& miss) {
  // Another replica may have written this conversation's newest state, or the tenant's shared
  // system prompt, since we last looked.
  refresh_session(query.partition, query.session);
  if (query.shared_session != 0 && query.shared_session != query.session) {
    refresh_session(query.partition, query.shared_session);
  }
  std::vector<std::string> victims;
  {
    MutexLock lock(mu_);
    victims = over_budget();
  }
  unlink_all(victims);
  if (std::optional<DiskHit> hit = unwritten_hit(query)) return hit;
  // A bad file is dropped and the next best tried; a few tries bound the time spent.
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::optional<DiskCandidate> c;
    {
      MutexLock lock(mu_);
      c = index_.best(query);
    }
    if (!c) {
      miss = attempt == 0 ? "none_longer" : miss;
      return std::nullopt;
    }
    const DiskHeader& h = c->entry.header;
    const auto started = std::chrono::steady_clock::now();
    Result<std::vector<std::uint8_t>> payload = read_entry_payload(root_, c->entry.rel_path, h);
    if (!payload.is_ok()) {
      const StatusCode code = payload.status().code();
      if (code == StatusCode::kDataLoss) {
        drop_file(c->entry.rel_path, payload.status());
        miss = "corrupt";
        continue;
      }
      MutexLock lock(mu_);
      index_.remove(c->entry.rel_path);
      if (code == StatusCode::kNotFound) {
        ++stats_.vanished;
        miss = "vanished";
        continue;
      }
      ++stats_.read_failures;
      log::warn("prompt cache disk: {}", payload.status().message());
      miss = "read_failed";
      return std::nullopt;
    }
    Result<std::shared_ptr<const Snapshot>> snap =
        codec_->decode(std::move(*payload), h.n_tokens, h.truncatable);
    if (!snap.is_ok()) {
      drop_file(c->entry.rel_path, snap.status());
      miss = "corrupt";
      continue;
    }
    const std::int64_t read_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count();
    MutexLock lock(mu_);
    index_.touch(c->entry.rel_path);
    ++stats_.hits;
    if (h.origin == Origin::kShared) ++stats_.hits_shared;
    stats_.tokens_reused += c->n_usable;
    stats_.read_bytes += h.file_bytes();
    stats_.read_ns_total += read_ns;
    stats_.read_ns_max = std::max(stats_.read_ns_max, read_ns);
    return DiskHit{.snapshot = std::move(*snap),
                   .tokens = std::move(c->entry.tokens),
                   .origin = h.origin,
                   .n_tokens_usable = c->n_usable};
  }
  return std::nullopt;
}

ClearResult DiskTier::clear() {
  writer_->cancel_all();
  ClearResult freed;
  std::vector<std::string> paths;
  {
    MutexLock lock(mu_);
    paths = index_.all_paths();
    freed.freed_entries = index_.entries();
    freed.freed_bytes = index_.bytes();
    for (const std::string& p : paths) index_.remove(p);
    stats_.cleared_entries += freed.freed_entries;
  }
  // Files this server never indexed (another replica's) are of the same cache: they go too.
  const DiskListing listing = list_entry_files(root_);
  for (const std::string& p : listing.entries) {
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
  }
  unlink_all(paths);
  return freed;
}

DiskStats DiskTier::stats() const {
  const DiskWriterStats w = writer_->stats();
  MutexLock lock(mu_);
  DiskStats s = stats_;
  s.entries = index_.entries();
  s.bytes = index_.bytes();
  s.writes_dropped = w.dropped;
  s.writes_coalesced = w.coalesced;
  s.writes_cancelled = w.cancelled;
  s.pending_writes = w.pending_jobs;
  s.pending_write_bytes = w.pending_bytes;
  return s;
}

}  // namespace recur::cache
