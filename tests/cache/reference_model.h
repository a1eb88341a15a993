// A deliberately trivial model of one store: a flat vector of entries, linear scans, the rules of
// docs/prompt-cache.md written as directly as possible. The randomized test checks the real store
// against it after every operation.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "cache/store.h"

namespace recur::cache::testing {

class ReferenceStore {
 public:
  struct Item {
    PartitionKey partition;
    SessionKey session;
    Origin origin;
    std::vector<Token> tokens;
    std::int64_t bytes;
    Nanos last_used_ns;
    std::uint64_t seq;
    int tag;
  };
  struct Found {
    LookupResult result;
    int tag = -1;
  };

  ReferenceStore(MatchMode mode, StorePolicy policy) : mode_(mode), p_(policy) {
    s_.enabled = p_.enabled && p_.max_entries > 0 && p_.capacity_bytes > 0;
    s_.capacity_bytes = p_.capacity_bytes;
    s_.max_entries = p_.max_entries;
  }

  Found lookup(const CacheKey& key, const std::vector<Token>& t, Nanos now) {
    expire(now);
    ++s_.lookups;
    if (!s_.enabled) return miss(MissReason::kDisabled, 0, 0);
    const PartitionKey pk{key.tenant, key.bucket};
    return mode_ == MatchMode::kExactPrefix ? exact(pk, key.session, t, now) : common(pk, t, now);
  }

  InsertResult insert(const CacheKey& key, Origin origin, const std::vector<Token>& t,
                      std::int64_t bytes, int tag, Nanos now) {
    expire(now);
    const auto n = static_cast<std::int64_t>(t.size());
    if (!s_.enabled || !p_.origin_enabled[static_cast<std::size_t>(origin)]) {
      return reject(InsertOutcome::kRejectedDisabled, n, bytes);
    }
    if (n == 0 || n < p_.min_prefix_tokens)
      return reject(InsertOutcome::kRejectedTooShort, n, bytes);
    if (bytes > p_.capacity_bytes) return reject(InsertOutcome::kRejectedOversized, n, bytes);
    const PartitionKey pk{key.tenant, key.bucket};
    InsertResult r;
    std::erase_if(items_, [&](const Item& e) {
      // Shared prefixes are never superseded: many conversations branch from each.
      const bool strict = origin != Origin::kShared && e.partition == pk &&
                          e.session == key.session && e.origin == origin &&
                          e.tokens.size() < t.size() && is_prefix(e.tokens, t);
      r.superseded += strict;
      return strict;
    });
    s_.supersedes += r.superseded;
    auto same = std::find_if(items_.begin(), items_.end(), [&](const Item& e) {
      return e.partition == pk && e.session == key.session && e.origin == origin && e.tokens == t;
    });
    if (same != items_.end()) {
      r.outcome = InsertOutcome::kReplaced;
      ++s_.replaces;
      *same = Item{pk, key.session, origin, t, bytes, now, ++seq_, tag};
    } else {
      items_.push_back(Item{pk, key.session, origin, t, bytes, now, ++seq_, tag});
    }
    ++s_.inserts;
    while (static_cast<std::int64_t>(items_.size()) > p_.max_entries ||
           total_bytes() > p_.capacity_bytes) {
      auto victim = std::min_element(items_.begin(), items_.end(),
                                     [](const Item& a, const Item& b) { return a.seq < b.seq; });
      const bool mine = victim->partition == pk && victim->session == key.session &&
                        (is_prefix(victim->tokens, t) || is_prefix(t, victim->tokens));
      ++(mine ? r.self_evicted : r.evicted_lru);
      items_.erase(victim);
    }
    s_.self_evictions += r.self_evicted;
    s_.evictions_lru += r.evicted_lru;
    return r;
  }

  std::int64_t sweep(Nanos now) { return expire(now); }

  ClearResult clear() {
    ClearResult c{static_cast<std::int64_t>(items_.size()), total_bytes()};
    s_.cleared_entries += c.freed_entries;
    items_.clear();
    return c;
  }

  StoreStats stats() const {
    StoreStats s = s_;
    s.entries = static_cast<std::int64_t>(items_.size());
    s.bytes = total_bytes();
    s.bytes_per_entry = s.entries > 0 ? s.bytes / s.entries : 0;
    s.hit_rate = s.lookups > 0 ? static_cast<double>(s.hits) / static_cast<double>(s.lookups) : 0;
    return s;
  }

  // Most recently used first, as Store::list_entries.
  std::vector<Item> items_by_recency() const {
    std::vector<Item> v = items_;
    std::sort(v.begin(), v.end(), [](const Item& a, const Item& b) { return a.seq > b.seq; });
    return v;
  }

 private:
  static bool is_prefix(const std::vector<Token>& a, const std::vector<Token>& b) {
    return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  static std::int64_t lcp(const std::vector<Token>& a, const std::vector<Token>& b) {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return static_cast<std::int64_t>(i);
  }
  std::int64_t total_bytes() const {
    std::int64_t b = 0;
    for (const Item& e : items_) b += e.bytes;
    return b;
  }
  std::int64_t expire(Nanos now) {
    if (p_.ttl_ns == 0) return 0;
    auto n =
        std::erase_if(items_, [&](const Item& e) { return now - e.last_used_ns >= p_.ttl_ns; });
    s_.evictions_ttl += static_cast<std::int64_t>(n);
    return static_cast<std::int64_t>(n);
  }
  Found hit(Item& e, std::int64_t usable, Nanos now) {
    e.last_used_ns = now;
    e.seq = ++seq_;
    ++s_.hits;
    if (e.origin == Origin::kShared) ++s_.hits_shared;
    s_.tokens_reused += usable;
    Found f;
    f.result.n_tokens_usable = usable;
    f.result.entry_tokens = static_cast<std::int64_t>(e.tokens.size());
    f.result.origin = e.origin;
    f.tag = e.tag;
    return f;
  }
  Found miss(MissReason reason, std::int64_t n, std::int64_t m) {
    std::int64_t* counters[] = {nullptr,
                                &s_.misses_disabled,
                                &s_.misses_no_candidate,
                                &s_.misses_different_session,
                                &s_.misses_diverged,
                                &s_.misses_too_short,
                                &s_.misses_whole_prompt};
    ++*counters[static_cast<int>(reason)];
    s_.last_miss = reason;
    s_.last_miss_diverged_at = n;
    s_.last_miss_entry_tokens = m;
    Found f;
    f.result.miss = reason;
    f.result.diverged_at = n;
    f.result.entry_tokens = m;
    return f;
  }
  InsertResult reject(InsertOutcome o, std::int64_t n, std::int64_t bytes) {
    if (o == InsertOutcome::kRejectedDisabled) ++s_.rejections_disabled;
    if (o == InsertOutcome::kRejectedTooShort) ++s_.rejections_too_short;
    if (o == InsertOutcome::kRejectedOversized) ++s_.rejections_oversized;
    s_.last_reject = o;
    s_.last_reject_tokens = n;
    s_.last_reject_bytes = bytes;
    return {.outcome = o};
  }

  Found exact(const PartitionKey& pk, const SessionKey& session, const std::vector<Token>& t,
              Nanos now) {
    const auto len = static_cast<std::int64_t>(t.size());
    const std::int64_t lo = std::max<std::int64_t>(1, p_.min_prefix_tokens);
    Item* best = nullptr;
    Item* other = nullptr;
    Item* latest = nullptr;
    for (Item& e : items_) {
      if (!(e.partition == pk)) continue;
      const auto m = static_cast<std::int64_t>(e.tokens.size());
      const bool usable = m >= lo && m <= len - 1 && is_prefix(e.tokens, t);
      if (e.session == session) {
        if (latest == nullptr || e.seq > latest->seq) latest = &e;
        if (usable &&
            (best == nullptr || m > static_cast<std::int64_t>(best->tokens.size()) ||
             (m == static_cast<std::int64_t>(best->tokens.size()) && e.seq > best->seq))) {
          best = &e;
        }
      } else if (usable &&
                 (other == nullptr || m > static_cast<std::int64_t>(other->tokens.size()))) {
        other = &e;
      }
    }
    if (best != nullptr) return hit(*best, static_cast<std::int64_t>(best->tokens.size()), now);
    if (other != nullptr) {
      const auto m = static_cast<std::int64_t>(other->tokens.size());
      return miss(MissReason::kDifferentSession, m, m);
    }
    if (latest == nullptr) return miss(MissReason::kNoCandidate, 0, 0);
    const std::int64_t n = lcp(latest->tokens, t);
    const auto m = static_cast<std::int64_t>(latest->tokens.size());
    if (n < std::min(m, len)) return miss(MissReason::kDiverged, n, m);
    return miss(m >= len ? MissReason::kWholePrompt : MissReason::kTooShort, n, m);
  }

  Found common(const PartitionKey& pk, const std::vector<Token>& t, Nanos now) {
    Item* best = nullptr;
    std::int64_t best_lcp = 0;
    for (Item& e : items_) {
      if (!(e.partition == pk)) continue;
      const std::int64_t d = lcp(e.tokens, t);
      const bool better = best == nullptr || d > best_lcp ||
                          (d == best_lcp && (e.tokens < best->tokens ||
                                             (e.tokens == best->tokens && e.seq > best->seq)));
      if (better) {
        best = &e;
        best_lcp = d;
      }
    }
    if (best == nullptr || best_lcp == 0) return miss(MissReason::kNoCandidate, 0, 0);
    const auto len = static_cast<std::int64_t>(t.size());
    std::int64_t usable = std::min(best_lcp, len - 1);
    usable -= usable % p_.block_tokens;
    if (usable >= std::max<std::int64_t>(1, p_.min_prefix_tokens)) return hit(*best, usable, now);
    const auto m = static_cast<std::int64_t>(best->tokens.size());
    return miss(best_lcp < std::min(m, len) ? MissReason::kDiverged : MissReason::kTooShort,
                best_lcp, m);
  }

  MatchMode mode_;
  StorePolicy p_;
  StoreStats s_;
  std::vector<Item> items_;
  std::uint64_t seq_ = 0;
};

}  // namespace recur::cache::testing
