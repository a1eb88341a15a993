// Store admission, supersede, eviction, expiry and accounting. Lookups are in store_lookup.cc.
#include "cache/store.h"

#include <algorithm>

#include "util/check.h"

namespace recur::cache {

const char* insert_outcome_name(InsertOutcome outcome) {
  switch (outcome) {
    case InsertOutcome::kInserted:
      return "inserted";
    case InsertOutcome::kReplaced:
      return "replaced";
    case InsertOutcome::kRejectedDisabled:
      return "disabled";
    case InsertOutcome::kRejectedTooShort:
      return "too_short";
    case InsertOutcome::kRejectedOversized:
      return "oversized";
  }
  return "unknown";
}

Store::Store(MatchMode mode, const StorePolicy& policy, const Clock& clock)
    : mode_(mode), policy_(policy), clock_(clock) {
  RECUR_CHECK(policy.capacity_bytes >= 0 && policy.max_entries >= 0);
  RECUR_CHECK(policy.ttl_ns >= 0 && policy.min_prefix_tokens >= 0 && policy.block_tokens >= 1);
}

Partition* Store::find_partition(const PartitionKey& key) {
  auto it = partitions_.find(key);
  return it == partitions_.end() ? nullptr : it->second.get();
}

void Store::touch(Entry* entry) {
  entry->last_used_ns = clock_.now_ns();
  entry->use_seq = ++next_use_seq_;
  lru_.splice(lru_.begin(), lru_, entry->lru_pos);
  auto& recent = entry->partition->sessions.find(entry->session)->second;
  recent.splice(recent.begin(), recent, entry->session_pos);
}

void Store::remove(Entry* entry) {
  Partition* part = entry->partition;
  bytes_ -= entry->bytes;
  auto& here = entry->node->entries;
  here.erase(std::find(here.begin(), here.end(), entry));
  part->tree.prune(entry->node);
  auto session = part->sessions.find(entry->session);
  session->second.erase(entry->session_pos);
  if (session->second.empty()) part->sessions.erase(session);
  lru_.erase(entry->lru_pos);
  if (part->tree.empty()) partitions_.erase(partitions_.find(part->key));
}

std::int64_t Store::expire_idle() {
  if (policy_.ttl_ns == 0) return 0;
  const Nanos now = clock_.now_ns();
  std::int64_t n = 0;
  // The LRU list is ordered by last use, so the expired entries are exactly its tail.
  while (!lru_.empty() && now - lru_.back().last_used_ns >= policy_.ttl_ns) {
    remove(&lru_.back());
    ++n;
  }
  stats_.evictions_ttl += n;
  return n;
}

std::int64_t Store::supersede(const PartitionKey& pkey, const SessionKey& session, Origin origin,
                              TokenSpan tokens) {
  // Shared prefixes are where many conversations branch: a deeper one (a client's cache
  // breakpoint after the first messages) leaves the shallower (the system prompt) as useful.
  if (origin == Origin::kShared) return 0;
  Partition* part = find_partition(pkey);
  if (part == nullptr) return 0;
  std::vector<Entry*> doomed;
  const auto n_tokens = static_cast<std::int64_t>(tokens.size());
  part->tree.walk(tokens, [&](RadixTree::Node* node) {
    if (node->depth == n_tokens) return;  // equal length is not a strict prefix
    for (Entry* e : node->entries) {
      if (e->origin == origin && e->session == session) doomed.push_back(e);
    }
  });
  for (Entry* e : doomed) remove(e);  // may drop `part`; it is not used after this
  stats_.supersedes += static_cast<std::int64_t>(doomed.size());
  return static_cast<std::int64_t>(doomed.size());
}

bool Store::retire(const CacheKey& key, Origin origin, TokenSpan tokens) {
  MutexLock lock(mu_);
  Partition* part = find_partition(PartitionKey{key.tenant, key.bucket});
  if (part == nullptr) return false;
  Entry* found = nullptr;
  const auto n_tokens = static_cast<std::int64_t>(tokens.size());
  part->tree.walk(tokens, [&](RadixTree::Node* node) {
    if (node->depth != n_tokens) return;
    for (Entry* e : node->entries) {
      if (e->origin == origin && e->session == key.session) found = e;
    }
  });
  if (found == nullptr) return false;
  remove(found);
  ++stats_.supersedes;
  return true;
}

void Store::evict_for(const Entry* newcomer, InsertResult& result) {
  while (static_cast<std::int64_t>(lru_.size()) > policy_.max_entries ||
         bytes_ > policy_.capacity_bytes) {
    Entry* victim = &lru_.back();
    RECUR_CHECK_MSG(victim != newcomer, "an admitted entry always fits by itself");
    const bool same_conversation = victim->partition == newcomer->partition &&
                                   victim->session == newcomer->session &&
                                   (RadixTree::is_prefix_of(victim->node, newcomer->node) ||
                                    RadixTree::is_prefix_of(newcomer->node, victim->node));
    ++(same_conversation ? result.self_evicted : result.evicted_lru);
    remove(victim);
  }
  stats_.self_evictions += result.self_evicted;
  stats_.evictions_lru += result.evicted_lru;
}

InsertResult Store::record_reject(InsertOutcome outcome, std::int64_t n_tokens,
                                  std::int64_t bytes) {
  switch (outcome) {
    case InsertOutcome::kRejectedDisabled:
      ++stats_.rejections_disabled;
      break;
    case InsertOutcome::kRejectedTooShort:
      ++stats_.rejections_too_short;
      break;
    default:
      ++stats_.rejections_oversized;
  }
  stats_.last_reject = outcome;
  stats_.last_reject_tokens = n_tokens;
  stats_.last_reject_bytes = bytes;
  return {.outcome = outcome};
}

std::optional<InsertOutcome> Store::rejection(Origin origin, std::int64_t n_tokens,
                                              std::int64_t n_bytes) const {
  if (!policy_.enabled || policy_.max_entries == 0 || policy_.capacity_bytes == 0 ||
      !policy_.origin_enabled[static_cast<std::size_t>(origin)]) {
    return InsertOutcome::kRejectedDisabled;
  }
  if (n_tokens == 0 || n_tokens < policy_.min_prefix_tokens)
    return InsertOutcome::kRejectedTooShort;
  if (n_bytes > policy_.capacity_bytes) return InsertOutcome::kRejectedOversized;
  return std::nullopt;
}

Entry* Store::find_or_create(PartitionKey pkey, const SessionKey& session, Origin origin,
                             TokenSpan tokens) {
  auto& slot = partitions_[pkey];
  if (slot == nullptr) {
    slot = std::make_unique<Partition>();
    slot->key = std::move(pkey);
  }
  Partition* part = slot.get();
  RadixTree::Node* node = part->tree.insert(tokens);
  for (Entry* e : node->entries) {
    if (e->origin == origin && e->session == session) return e;
  }
  Entry* entry = &lru_.emplace_front();
  entry->lru_pos = lru_.begin();
  entry->partition = part;
  entry->session = session;
  entry->origin = origin;
  entry->node = node;
  entry->n_tokens = static_cast<std::int64_t>(tokens.size());
  node->entries.push_back(entry);
  auto& recent = part->sessions[session];
  recent.push_front(entry);
  entry->session_pos = recent.begin();
  return entry;
}

InsertResult Store::insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                           std::shared_ptr<const Snapshot> snapshot) {
  RECUR_CHECK(snapshot != nullptr);
  const auto n_tokens = static_cast<std::int64_t>(tokens.size());
  RECUR_CHECK_MSG(snapshot->n_tokens() == n_tokens, "a snapshot must cover exactly its tokens");
  const auto n_bytes = static_cast<std::int64_t>(snapshot->byte_size());
  MutexLock lock(mu_);
  expire_idle();
  if (auto reject = rejection(origin, n_tokens, n_bytes)) {
    return record_reject(*reject, n_tokens, n_bytes);
  }
  InsertResult result;
  PartitionKey pkey{key.tenant, key.bucket};
  // Before the newcomer's bytes count, so an extension fits where it would not beside its ancestor.
  result.superseded = supersede(pkey, key.session, origin, tokens);
  Entry* entry = find_or_create(std::move(pkey), key.session, origin, tokens);
  if (entry->snapshot != nullptr) {
    result.outcome = InsertOutcome::kReplaced;
    ++stats_.replaces;
    bytes_ -= entry->bytes;
  }
  entry->snapshot = std::move(snapshot);
  entry->bytes = n_bytes;
  bytes_ += n_bytes;
  touch(entry);
  ++stats_.inserts;
  evict_for(entry, result);
  return result;
}

std::int64_t Store::sweep() {
  MutexLock lock(mu_);
  return expire_idle();
}

ClearResult Store::clear() {
  MutexLock lock(mu_);
  ClearResult freed{.freed_entries = static_cast<std::int64_t>(lru_.size()), .freed_bytes = bytes_};
  stats_.cleared_entries += freed.freed_entries;
  partitions_.clear();
  lru_.clear();
  bytes_ = 0;
  return freed;
}

StoreStats Store::stats() const {
  MutexLock lock(mu_);
  StoreStats s = stats_;
  s.enabled = policy_.enabled && policy_.max_entries > 0 && policy_.capacity_bytes > 0;
  s.entries = static_cast<std::int64_t>(lru_.size());
  s.bytes = bytes_;
  s.capacity_bytes = policy_.capacity_bytes;
  s.max_entries = policy_.max_entries;
  s.bytes_per_entry = s.entries > 0 ? s.bytes / s.entries : 0;
  s.hit_rate = s.lookups > 0 ? static_cast<double>(s.hits) / static_cast<double>(s.lookups) : 0;
  return s;
}

std::vector<EntryView> Store::list_entries() const {
  MutexLock lock(mu_);
  std::vector<EntryView> out;
  out.reserve(lru_.size());
  for (const Entry& e : lru_) {
    out.push_back({.partition = e.partition->key,
                   .session = e.session,
                   .origin = e.origin,
                   .tokens = RadixTree::path(e.node),
                   .bytes = e.bytes,
                   .last_used_ns = e.last_used_ns});
  }
  return out;
}

void Store::check_invariants() const {
  MutexLock lock(mu_);
  RECUR_CHECK(static_cast<std::int64_t>(lru_.size()) <= policy_.max_entries);
  RECUR_CHECK(bytes_ <= policy_.capacity_bytes);
  std::int64_t bytes = 0;
  std::int64_t in_trees = 0;
  std::uint64_t prev_seq = ~std::uint64_t{0};
  for (const Entry& e : lru_) {
    bytes += e.bytes;
    RECUR_CHECK(e.use_seq < prev_seq);
    prev_seq = e.use_seq;
    RECUR_CHECK(e.node->depth == e.n_tokens && e.snapshot->n_tokens() == e.n_tokens);
  }
  std::int64_t in_sessions = 0;
  for (const auto& [key, part] : partitions_) {
    RECUR_CHECK(!part->tree.empty() && part->key == key);
    in_trees += part->tree.check_invariants();
    for (const auto& [session, recent] : part->sessions) {
      in_sessions += static_cast<std::int64_t>(recent.size());
    }
  }
  RECUR_CHECK(bytes == bytes_);
  RECUR_CHECK(in_trees == static_cast<std::int64_t>(lru_.size()));
  RECUR_CHECK(in_sessions == static_cast<std::int64_t>(lru_.size()));
}

}  // namespace recur::cache
