// The two-store facade.
#include "cache/prompt_cache.h"

namespace recur::cache {

PromptCache::PromptCache(const CacheBudgets& budgets, const Clock& clock)
    : prefix_(MatchMode::kCommonPrefix, budgets.prefix, clock),
      snapshot_(MatchMode::kExactPrefix, budgets.snapshot, clock) {}

LookupResult PromptCache::lookup(const CacheKey& key, TokenSpan tokens, bool truncatable) {
  return store_for(truncatable).lookup(key, tokens);
}

InsertResult PromptCache::insert(const CacheKey& key, Origin origin, TokenSpan tokens,
                                 std::shared_ptr<const Snapshot> snapshot) {
  Store& store = store_for(snapshot->truncatable());
  return store.insert(key, origin, tokens, std::move(snapshot));
}

bool PromptCache::retire(const CacheKey& key, Origin origin, TokenSpan tokens, bool truncatable) {
  return store_for(truncatable).retire(key, origin, tokens);
}

std::int64_t PromptCache::sweep() { return prefix_.sweep() + snapshot_.sweep(); }

ClearResult PromptCache::clear() {
  ClearResult a = prefix_.clear();
  ClearResult b = snapshot_.clear();
  return {.freed_entries = a.freed_entries + b.freed_entries,
          .freed_bytes = a.freed_bytes + b.freed_bytes};
}

PromptCacheStats PromptCache::stats() const { return {prefix_.stats(), snapshot_.stats()}; }

}  // namespace recur::cache
