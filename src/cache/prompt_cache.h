// The prompt cache the engine talks to: the snapshot store (non-truncatable states, exact
// prefixes, per session) and the prefix store (truncatable dense KV, longest common prefix,
// shared across sessions), chosen by the snapshot's truncatable() flag, and optionally the disk
// tier under both (every admitted entry is written through; loads are asynchronous). Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "cache/budgets.h"
#include "cache/disk_tier.h"
#include "cache/store.h"

namespace recur::cache {

struct PromptCacheStats {
  StoreStats prefix;
  StoreStats snapshot;
  std::optional<DiskStats> disk;  // nullopt without --prompt-cache-dir
};

class PromptCache {
 public:
  // `clock` must outlive the cache. `disk` may be null (RAM only).
  PromptCache(const CacheBudgets& budgets, const Clock& clock,
              std::unique_ptr<DiskTier> disk = nullptr);

  // Looks in the store that holds the model's kind of state.
  LookupResult lookup(const CacheKey& key, TokenSpan tokens, bool truncatable);
  // Routes by snapshot->truncatable(); an admitted entry is also queued for the disk tier.
  InsertResult insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                      std::shared_ptr<const Snapshot> snapshot);

  // Without a disk tier: null. Otherwise starts loading the disk's best entry for `tokens` if it
  // is usable for more than `better_than` tokens (what the RAM lookup found); `on_done` runs on
  // the tier's reader thread once the load is done (DiskLoad::done()).
  std::shared_ptr<DiskLoad> load_from_disk(const CacheKey& key, TokenSpan tokens, bool truncatable,
                                           std::int64_t better_than, std::function<void()> on_done);
  // Puts an entry loaded from disk into its RAM store (it is on disk already: not written back);
  // a shared system-prompt entry (origin shared) into the shared session of the key's tenant.
  InsertResult adopt(const CacheKey& key, const DiskHit& hit);
  DiskTier* disk() { return disk_.get(); }

  // Store::retire in the store of the model's kind of state.
  bool retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable);

  std::int64_t sweep();  // both stores; returns the expired entries
  ClearResult clear();   // both stores and the disk tier; the sum of what was freed
  PromptCacheStats stats() const;

  Store& store_for(bool truncatable) { return truncatable ? prefix_ : snapshot_; }
  Store& prefix_store() { return prefix_; }
  Store& snapshot_store() { return snapshot_; }

 private:
  Store prefix_;
  Store snapshot_;
  std::unique_ptr<DiskTier> disk_;
};

}  // namespace recur::cache
