// The prompt cache the engine talks to: the snapshot store (non-truncatable states, exact
// prefixes, per session) and the prefix store (truncatable dense KV, longest common prefix,
// shared across sessions), chosen by the snapshot's truncatable() flag. Thread-safe.
#pragma once

#include <memory>

#include "cache/budgets.h"
#include "cache/store.h"

namespace recur::cache {

struct PromptCacheStats {
  StoreStats prefix;
  StoreStats snapshot;
};

class PromptCache {
 public:
  // `clock` must outlive the cache.
  PromptCache(const CacheBudgets& budgets, const Clock& clock);

  // Looks in the store that holds the model's kind of state.
  LookupResult lookup(const CacheKey& key, TokenSpan tokens, bool truncatable);
  // Routes by snapshot->truncatable().
  InsertResult insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                      std::shared_ptr<const Snapshot> snapshot);

  // Store::retire in the store of the model's kind of state.
  bool retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable);

  std::int64_t sweep();  // both stores; returns the expired entries
  ClearResult clear();   // both stores; the sum of what was freed
  PromptCacheStats stats() const;

  Store& store_for(bool truncatable) { return truncatable ? prefix_ : snapshot_; }
  Store& prefix_store() { return prefix_; }
  Store& snapshot_store() { return snapshot_; }

 private:
  Store prefix_;
  Store snapshot_;
};

}  // namespace recur::cache
