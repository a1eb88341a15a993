// The two-store facade.
#include "cache/prompt_cache.h"

namespace recur::cache {

PromptCache::PromptCache(const CacheBudgets& budgets, const Clock& clock,
                         std::unique_ptr<DiskTier> disk)
    : prefix_(MatchMode::kCommonPrefix, budgets.prefix, clock),
      snapshot_(MatchMode::kExactPrefix, budgets.snapshot, clock),
      disk_(std::move(disk)) {}

LookupResult PromptCache::lookup(const CacheKey& key, TokenSpan tokens, bool truncatable) {
  return store_for(truncatable).lookup(key, tokens);
}

InsertResult PromptCache::insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                                 std::shared_ptr<const Snapshot> snapshot) {
  Store& store = store_for(snapshot->truncatable());
  // Written through, not only on eviction: a restart, a kill -9 or another replica finds the
  // entry on disk while this server still holds it in RAM.
  std::shared_ptr<const Snapshot> for_disk = disk_ != nullptr ? snapshot : nullptr;
  InsertResult r = store.insert(key, origin, tokens, std::move(snapshot));
  if (for_disk != nullptr && r.admitted()) disk_->store(key, origin, tokens, std::move(for_disk));
  return r;
}

std::shared_ptr<DiskLoad> PromptCache::load_from_disk(const CacheKey& key, TokenSpan tokens,
                                                      bool truncatable, std::int64_t better_than,
                                                      std::function<void()> on_done) {
  const Store& store = store_for(truncatable);
  if (disk_ == nullptr || !store.policy().enabled) return nullptr;
  return disk_->load(key, tokens, truncatable, store.policy(), better_than, std::move(on_done));
}

InsertResult PromptCache::adopt(const CacheKey& key, const DiskHit& hit) {
  // A shared system-prompt entry goes back to the tenant's shared session, where every new
  // conversation finds it, not into the session of the one that loaded it.
  CacheKey into = key;
  if (hit.origin == Origin::kShared) into.session = SessionKey::shared();
  return store_for(hit.snapshot->truncatable()).insert(into, hit.origin, hit.tokens, hit.snapshot);
}

bool PromptCache::retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable) {
  if (disk_ != nullptr) disk_->retire(key, origin, tokens, truncatable);
  return store_for(truncatable).retire(key, origin, tokens);
}

std::int64_t PromptCache::sweep() { return prefix_.sweep() + snapshot_.sweep(); }

ClearResult PromptCache::clear() {
  ClearResult a = prefix_.clear();
  ClearResult b = snapshot_.clear();
  ClearResult d = disk_ != nullptr ? disk_->clear() : ClearResult{};
  return {.freed_entries = a.freed_entries + b.freed_entries,
          .freed_bytes = a.freed_bytes + b.freed_bytes,
          .freed_disk_entries = d.freed_entries,
          .freed_disk_bytes = d.freed_bytes};
}

PromptCacheStats PromptCache::stats() const {
  PromptCacheStats s{prefix_.stats(), snapshot_.stats(), std::nullopt};
  if (disk_ != nullptr) s.disk = disk_->stats();
  return s;
}

}  // namespace recur::cache
