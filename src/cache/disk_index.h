// The disk tier's in-memory index: every entry file this server knows of (header, tokens, path),
// its order of last use, the byte total, and the lookups of both stores over it (exact prefix of
// one session; longest common prefix in a partition). Holds no payloads and does no I/O.
// Thread-compatible: DiskTier guards it with its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/disk_format.h"
#include "cache/disk_io.h"

namespace recur::cache {

struct DiskCandidate {
  DiskEntryHead entry;        // a copy: the file may be dropped from the index meanwhile
  std::int64_t n_usable = 0;  // prompt tokens it can stand for
};

// What a lookup over the index asks for.
struct DiskQuery {
  std::uint64_t partition = 0;
  std::uint64_t session = 0;
  // kSnapshot: the tenant's shared session (system-prompt prefixes any session may resume from),
  // searched after the session's own entries; 0: none (--no-prompt-cache-shared).
  std::uint64_t shared_session = 0;
  DiskKind kind = DiskKind::kSnapshot;
  std::vector<Token> tokens;     // the prompt
  std::int64_t better_than = 0;  // only candidates usable for more tokens than this
  std::int64_t min_prefix_tokens = 1;
  std::int64_t block_tokens = 1;  // kPrefix: the usable length is a multiple of this
};

class DiskIndex {
 public:
  // Adds or replaces the entry of this path; it becomes the most recently used.
  void add(DiskEntryHead entry);
  // Drops the entry of this path; returns it if it was indexed.
  std::optional<DiskEntryHead> remove(const std::string& rel_path);
  bool contains(const std::string& rel_path) const { return entries_.contains(rel_path); }
  void touch(const std::string& rel_path);

  // The best entry for `query` (snapshot kind: the longest entry of the session, or of the shared
  // session, that is a strict prefix of the prompt, the session's own winning a tie; prefix kind:
  // the longest common prefix of any entry of the partition, rounded down to a block), or nullopt
  // when none beats query.better_than.
  std::optional<DiskCandidate> best(const DiskQuery& query) const;

  // Entries of the same partition, session, kind and origin whose tokens are a strict prefix of
  // `tokens`: a newer snapshot of the conversation made them redundant (the store's supersede).
  std::vector<std::string> strict_prefixes(const DiskHeader& header, TokenSpan tokens) const;
  // Paths of one session directory that are indexed.
  std::vector<std::string> paths_of_session(std::uint64_t partition, std::uint64_t session) const;

  // The least recently used entry's path, if any.
  std::optional<std::string> lru_victim() const;
  std::vector<std::string> all_paths() const;

  std::int64_t bytes() const { return bytes_; }
  std::int64_t entries() const { return static_cast<std::int64_t>(entries_.size()); }
  // Aborts if the totals or the secondary maps disagree with the entries.
  void check_invariants() const;

 private:
  struct Slot {
    DiskEntryHead head;
    std::uint64_t use_seq = 0;
  };
  std::optional<DiskCandidate> best_exact(const DiskQuery& query) const;
  std::optional<DiskCandidate> best_common(const DiskQuery& query) const;
  const std::set<std::string>* session_paths(std::uint64_t partition, std::uint64_t session) const;

  std::unordered_map<std::string, Slot> entries_;
  std::map<std::uint64_t, std::string> lru_;  // use_seq -> path; smallest is least recent
  // partition -> session -> paths
  std::unordered_map<std::uint64_t, std::unordered_map<std::uint64_t, std::set<std::string>>>
      sessions_;
  std::int64_t bytes_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace recur::cache
