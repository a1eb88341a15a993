// One prompt-cache store: entries (token vector + opaque snapshot) indexed by a radix tree per
// tenant + bucket, under a byte budget, an entry cap, an idle TTL and LRU eviction, with
// supersede of a conversation's older snapshots. The snapshot store (exact prefixes, per session)
// and the prefix store (longest common prefix, shared across sessions) differ only in lookup.
// Thread-safe: every public method takes the store's one lock; snapshots are copied out by the
// caller after the lock is released.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/keys.h"
#include "cache/radix_tree.h"
#include "cache/snapshot.h"
#include "cache/stats.h"
#include "cache/thread_annotations.h"
#include "util/clock.h"

namespace recur::cache {

enum class MatchMode : std::uint8_t {
  kExactPrefix,   // snapshot store: a stored vector that is a prefix of the prompt, same session
  kCommonPrefix,  // prefix store: longest common prefix, any session; the caller truncates
};

struct StorePolicy {
  bool enabled = true;
  std::int64_t capacity_bytes = 0;
  std::int64_t max_entries = 0;
  Nanos ttl_ns = 0;  // idle time after which an entry expires; 0: never
  std::int64_t min_prefix_tokens = 1;
  // kCommonPrefix only: the usable length is rounded down to a multiple of this.
  std::int64_t block_tokens = 1;
  // Per origin (indexed by Origin): inserts of a switched-off origin are rejected as disabled
  // (--no-prompt-cache-boundary, --no-prompt-cache-warmup).
  std::array<bool, kNumOrigins> origin_enabled{true, true, true, true};
};

// A stored entry as tests and diagnostics see it.
struct EntryView {
  PartitionKey partition;
  SessionKey session;
  Origin origin = Origin::kCompletion;
  std::vector<Token> tokens;
  std::int64_t bytes = 0;
  Nanos last_used_ns = 0;
};

struct Partition;

// The store's own record of a snapshot. Lives in the store's LRU list (stable address).
struct Entry {
  Partition* partition = nullptr;
  SessionKey session;
  Origin origin = Origin::kCompletion;
  RadixTree::Node* node = nullptr;
  std::shared_ptr<const Snapshot> snapshot;
  std::int64_t n_tokens = 0;
  std::int64_t bytes = 0;
  Nanos last_used_ns = 0;
  std::uint64_t use_seq = 0;  // store-wide order of last use: larger is more recent
  std::list<Entry>::iterator lru_pos;
  std::list<Entry*>::iterator session_pos;
};

// One tenant + bucket: its tree and its sessions (each a list of entries, most recent first).
struct Partition {
  PartitionKey key;
  RadixTree tree;
  std::unordered_map<SessionKey, std::list<Entry*>, SessionKeyHash> sessions;
};

class Store {
 public:
  // `clock` must outlive the store. Aborts on a policy that makes no sense (negative limits).
  Store(MatchMode mode, const StorePolicy& policy, const Clock& clock);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The best reusable entry for `tokens` (see MatchMode); a hit refreshes the entry's LRU
  // position and idle time. Never consumes the entry.
  LookupResult lookup(const CacheKey& key, TokenSpan tokens) RECUR_EXCLUDES(mu_);

  // Admits `snapshot` of exactly `tokens` (snapshot->n_tokens() must equal tokens.size()): rejects
  // (disabled store or origin, too short, oversized), supersedes strict prefixes of the same tenant
  // + bucket + session + origin, replaces an identical key, then evicts least-recently-used entries
  // until the budgets hold. The newcomer is never evicted by its own admission.
  InsertResult insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                      std::shared_ptr<const Snapshot> snapshot) RECUR_EXCLUDES(mu_);

  // Removes the entry of exactly this key, origin and tokens, if one is stored: a later snapshot
  // of the same conversation made it redundant (the engine retires a turn's completion snapshot
  // once that turn's warm-up is stored). Counted as a supersede. Returns whether one was removed.
  bool retire(const CacheKey& key, Origin origin, TokenSpan tokens) RECUR_EXCLUDES(mu_);

  // Expires every entry idle for the TTL or longer; returns how many. Every lookup and insert
  // does the same first, so this is only needed to free memory while the store is not used.
  std::int64_t sweep() RECUR_EXCLUDES(mu_);
  // Removes every entry; counters are kept.
  ClearResult clear() RECUR_EXCLUDES(mu_);

  StoreStats stats() const RECUR_EXCLUDES(mu_);
  const StorePolicy& policy() const { return policy_; }
  MatchMode mode() const { return mode_; }

  // Every entry, most recently used first; O(stored tokens), for tests and diagnostics.
  std::vector<EntryView> list_entries() const RECUR_EXCLUDES(mu_);
  // Aborts if an internal invariant is broken (tree shape, byte and entry totals, budgets).
  void check_invariants() const RECUR_EXCLUDES(mu_);

 private:
  LookupResult lookup_exact(Partition& part, const SessionKey& session, TokenSpan tokens)
      RECUR_REQUIRES(mu_);
  LookupResult lookup_common(Partition& part, TokenSpan tokens) RECUR_REQUIRES(mu_);
  LookupResult classify_session_miss(Partition& part, const SessionKey& session, TokenSpan tokens)
      RECUR_REQUIRES(mu_);
  LookupResult record_hit(Entry* entry, std::int64_t n_usable) RECUR_REQUIRES(mu_);
  LookupResult record_miss(MissReason reason, std::int64_t diverged_at, std::int64_t entry_tokens)
      RECUR_REQUIRES(mu_);
  InsertResult record_reject(InsertOutcome outcome, std::int64_t n_tokens, std::int64_t bytes)
      RECUR_REQUIRES(mu_);

  std::optional<InsertOutcome> rejection(Origin origin, std::int64_t n_tokens,
                                         std::int64_t n_bytes) const;
  // The entry for exactly this key and tokens: the existing one (to replace; it has a snapshot)
  // or a new one at the LRU front (no snapshot yet).
  Entry* find_or_create(PartitionKey pkey, const SessionKey& session, Origin origin,
                        TokenSpan tokens) RECUR_REQUIRES(mu_);
  std::int64_t supersede(const PartitionKey& pkey, const SessionKey& session, Origin origin,
                         TokenSpan tokens) RECUR_REQUIRES(mu_);
  void evict_for(const Entry* newcomer, InsertResult& result) RECUR_REQUIRES(mu_);
  std::int64_t expire_idle() RECUR_REQUIRES(mu_);
  void touch(Entry* entry) RECUR_REQUIRES(mu_);
  void remove(Entry* entry) RECUR_REQUIRES(mu_);
  Partition* find_partition(const PartitionKey& key) RECUR_REQUIRES(mu_);

  const MatchMode mode_;
  const StorePolicy policy_;
  const Clock& clock_;

  mutable Mutex mu_;
  std::list<Entry> lru_ RECUR_GUARDED_BY(mu_);  // most recently used first
  std::unordered_map<PartitionKey, std::unique_ptr<Partition>, PartitionKeyHash> partitions_
      RECUR_GUARDED_BY(mu_);
  std::int64_t bytes_ RECUR_GUARDED_BY(mu_) = 0;
  std::uint64_t next_use_seq_ RECUR_GUARDED_BY(mu_) = 0;
  StoreStats stats_ RECUR_GUARDED_BY(mu_);  // counters; entries/bytes are filled in by stats()
};

}  // namespace recur::cache
