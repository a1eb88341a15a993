// Plain result and statistics structs of the cache stores: what one lookup or insert did, and
// the counters of a store. No JSON here; the server renders them for /v1/cache/stats and /metrics.
#pragma once

#include <cstdint>
#include <memory>

#include "cache/keys.h"
#include "cache/snapshot.h"

namespace recur::cache {

// Why a lookup found nothing to reuse. A closed set, so it can label a metric.
enum class MissReason : std::uint8_t {
  kNone,              // a hit
  kDisabled,          // the store is disabled
  kNoCandidate,       // nothing stored for this tenant + bucket (+ session) shares a token
  kDifferentSession,  // a usable entry exists, but it belongs to another session
  kDiverged,          // the best entry (of M tokens) differs from the prompt at token N
  kTooShort,          // the reusable part (N tokens) is below the minimum prefix
  kWholePrompt,       // a non-truncatable entry covers the whole prompt: no token left to compute
};
inline constexpr int kNumMissReasons = 7;
const char* miss_reason_name(MissReason reason);

struct LookupResult {
  // Null on a miss. The caller copies the state out of it after the call (no lock is held) and
  // keeps it alive through the shared_ptr even if the store evicts the entry meanwhile.
  std::shared_ptr<const Snapshot> snapshot;
  std::int64_t n_tokens_usable = 0;  // prompt tokens the caller may skip (truncate to this)
  std::int64_t entry_tokens = 0;     // tokens of the entry found (hit) or named by the miss
  std::int64_t diverged_at = 0;      // kDiverged: index of the first differing token (N)
  Origin origin = Origin::kCompletion;
  MissReason miss = MissReason::kNone;
  bool hit() const { return snapshot != nullptr; }
};

enum class InsertOutcome : std::uint8_t {
  kInserted,
  kReplaced,  // an entry with the same key and tokens existed: its snapshot was replaced
  kRejectedDisabled,
  kRejectedTooShort,   // fewer tokens than the minimum prefix
  kRejectedOversized,  // larger than the whole byte budget
};
const char* insert_outcome_name(InsertOutcome outcome);

struct InsertResult {
  InsertOutcome outcome = InsertOutcome::kInserted;
  std::int64_t superseded = 0;    // strict prefixes of the same chain removed first
  std::int64_t evicted_lru = 0;   // other entries evicted to make room
  std::int64_t self_evicted = 0;  // entries of the same conversation evicted to make room
  bool admitted() const {
    return outcome == InsertOutcome::kInserted || outcome == InsertOutcome::kReplaced;
  }
};

struct ClearResult {
  std::int64_t freed_entries = 0;
  std::int64_t freed_bytes = 0;
  std::int64_t freed_disk_entries = 0;  // files the disk tier deleted (PromptCache::clear)
  std::int64_t freed_disk_bytes = 0;
};

// Counters of one store, all read under one lock: consistent with each other at any instant.
// Counters only grow (clear() does not reset them); entries/bytes are the current contents.
// lookups == hits + sum(misses_*); inserts counts admissions (replaces included);
// entries == inserts - replaces - supersedes - evictions_lru - self_evictions - evictions_ttl
//            - cleared_entries.
struct StoreStats {
  bool enabled = false;
  std::int64_t entries = 0;
  std::int64_t bytes = 0;
  std::int64_t capacity_bytes = 0;
  std::int64_t max_entries = 0;
  std::int64_t bytes_per_entry = 0;  // bytes / entries, 0 when empty
  std::int64_t lookups = 0;
  std::int64_t hits = 0;
  std::int64_t hits_shared = 0;  // of hits: a session resumed from the tenant's shared prefix
  double hit_rate = 0;           // hits / lookups, 0 before the first lookup
  std::int64_t tokens_reused = 0;
  std::int64_t inserts = 0;
  std::int64_t replaces = 0;
  std::int64_t supersedes = 0;
  std::int64_t evictions_lru = 0;
  std::int64_t evictions_ttl = 0;
  std::int64_t self_evictions = 0;   // LRU victims of the conversation being admitted, not in lru
  std::int64_t cleared_entries = 0;  // removed by clear()
  std::int64_t rejections_oversized = 0;
  std::int64_t rejections_too_short = 0;
  std::int64_t rejections_disabled = 0;
  std::int64_t misses_disabled = 0;
  std::int64_t misses_no_candidate = 0;
  std::int64_t misses_different_session = 0;
  std::int64_t misses_diverged = 0;
  std::int64_t misses_too_short = 0;
  std::int64_t misses_whole_prompt = 0;
  // The latest miss, for "why did my last turn miss": reason, N and M.
  MissReason last_miss = MissReason::kNone;
  std::int64_t last_miss_diverged_at = 0;
  std::int64_t last_miss_entry_tokens = 0;
  // The latest rejected insert: its outcome and size.
  InsertOutcome last_reject = InsertOutcome::kInserted;
  std::int64_t last_reject_tokens = 0;
  std::int64_t last_reject_bytes = 0;

  bool operator==(const StoreStats&) const = default;
};

}  // namespace recur::cache
