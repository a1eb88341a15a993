// Store lookups: exact prefixes within a session (snapshot store) and longest common prefixes
// across sessions (prefix store), and the classification of a miss.
#include <algorithm>

#include "cache/store.h"
#include "util/check.h"

namespace recur::cache {

const char* miss_reason_name(MissReason reason) {
  switch (reason) {
    case MissReason::kNone:
      return "none";
    case MissReason::kDisabled:
      return "disabled";
    case MissReason::kNoCandidate:
      return "no_candidate";
    case MissReason::kDifferentSession:
      return "different_session";
    case MissReason::kDiverged:
      return "diverged";
    case MissReason::kTooShort:
      return "too_short";
    case MissReason::kWholePrompt:
      return "whole_prompt";
  }
  return "unknown";
}

namespace {

// The most recently used of `entries` that passes `keep`, or null.
template <typename Keep>
Entry* most_recent(const std::vector<Entry*>& entries, Keep&& keep) {
  Entry* best = nullptr;
  for (Entry* e : entries) {
    if (keep(e) && (best == nullptr || e->use_seq > best->use_seq)) best = e;
  }
  return best;
}

std::int64_t common_prefix(const std::vector<Token>& a, TokenSpan b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<std::int64_t>(i);
}

}  // namespace

LookupResult Store::lookup(const CacheKey& key, TokenSpan tokens) {
  MutexLock lock(mu_);
  expire_idle();
  ++stats_.lookups;
  if (!policy_.enabled || policy_.max_entries == 0 || policy_.capacity_bytes == 0) {
    return record_miss(MissReason::kDisabled, 0, 0);
  }
  Partition* part = find_partition(PartitionKey{key.tenant, key.bucket});
  if (part == nullptr) return record_miss(MissReason::kNoCandidate, 0, 0);
  return mode_ == MatchMode::kExactPrefix ? lookup_exact(*part, key.session, tokens)
                                          : lookup_common(*part, tokens);
}

LookupResult Store::lookup_exact(Partition& part, const SessionKey& session, TokenSpan tokens) {
  // A non-truncatable state must leave at least one prompt token to compute (for the logits).
  const auto max_usable = static_cast<std::int64_t>(tokens.size()) - 1;
  const std::int64_t min_usable = std::max<std::int64_t>(1, policy_.min_prefix_tokens);
  Entry* best = nullptr;
  Entry* other = nullptr;  // the longest usable entry of another session
  // The deepest usable entry wins: the session's own, else the tenant's shared prefix (a new
  // conversation that starts with a known system prompt).
  part.tree.walk(tokens, [&](RadixTree::Node* node) {
    if (node->depth < min_usable || node->depth > max_usable) return;
    if (Entry* e = most_recent(node->entries, [&](Entry* x) { return x->session == session; })) {
      best = e;
    } else if (Entry* s = most_recent(node->entries, [](Entry* x) {
                 return x->session.kind == SessionKind::kShared;
               })) {
      best = s;
    } else if (!node->entries.empty()) {
      other = node->entries.front();
    }
  });
  if (best != nullptr) return record_hit(best, best->n_tokens);
  if (other != nullptr) {
    return record_miss(MissReason::kDifferentSession, other->n_tokens, other->n_tokens);
  }
  return classify_session_miss(part, session, tokens);
}

// Names the session's most recently used entry: where it parts from the prompt, or why it could
// not be used although it is a prefix of the prompt.
LookupResult Store::classify_session_miss(Partition& part, const SessionKey& session,
                                          TokenSpan tokens) {
  auto it = part.sessions.find(session);
  if (it == part.sessions.end()) return record_miss(MissReason::kNoCandidate, 0, 0);
  const Entry* latest = it->second.front();
  const std::int64_t n_common = common_prefix(RadixTree::path(latest->node), tokens);
  const auto n_prompt = static_cast<std::int64_t>(tokens.size());
  if (n_common < std::min(latest->n_tokens, n_prompt)) {
    return record_miss(MissReason::kDiverged, n_common, latest->n_tokens);
  }
  if (latest->n_tokens >= n_prompt) {
    return record_miss(MissReason::kWholePrompt, n_common, latest->n_tokens);
  }
  return record_miss(MissReason::kTooShort, n_common, latest->n_tokens);
}

LookupResult Store::lookup_common(Partition& part, TokenSpan tokens) {
  const RadixTree::Match match = part.tree.walk(tokens, [](RadixTree::Node*) {});
  if (match.subtree == nullptr) return record_miss(MissReason::kNoCandidate, 0, 0);
  // Every entry below match.subtree shares the most tokens; the shortest (lexicographically
  // first) is chosen, then the most recently used among equal vectors: a deterministic rule.
  RadixTree::Node* node = RadixTree::first_entry_node(match.subtree);
  Entry* entry = most_recent(node->entries, [](Entry*) { return true; });
  const auto n_prompt = static_cast<std::int64_t>(tokens.size());
  std::int64_t usable = std::min(match.n_matched, n_prompt - 1);
  usable -= usable % policy_.block_tokens;
  if (usable >= std::max<std::int64_t>(1, policy_.min_prefix_tokens)) {
    return record_hit(entry, usable);
  }
  if (match.n_matched < std::min(entry->n_tokens, n_prompt)) {
    return record_miss(MissReason::kDiverged, match.n_matched, entry->n_tokens);
  }
  return record_miss(MissReason::kTooShort, match.n_matched, entry->n_tokens);
}

LookupResult Store::record_hit(Entry* entry, std::int64_t n_usable) {
  touch(entry);
  ++stats_.hits;
  if (entry->origin == Origin::kShared) ++stats_.hits_shared;
  stats_.tokens_reused += n_usable;
  return {.snapshot = entry->snapshot,
          .n_tokens_usable = n_usable,
          .entry_tokens = entry->n_tokens,
          .origin = entry->origin};
}

LookupResult Store::record_miss(MissReason reason, std::int64_t diverged_at,
                                std::int64_t entry_tokens) {
  switch (reason) {
    case MissReason::kDisabled:
      ++stats_.misses_disabled;
      break;
    case MissReason::kNoCandidate:
      ++stats_.misses_no_candidate;
      break;
    case MissReason::kDifferentSession:
      ++stats_.misses_different_session;
      break;
    case MissReason::kDiverged:
      ++stats_.misses_diverged;
      break;
    case MissReason::kTooShort:
      ++stats_.misses_too_short;
      break;
    case MissReason::kWholePrompt:
      ++stats_.misses_whole_prompt;
      break;
    case MissReason::kNone:
      RECUR_CHECK_MSG(false, "a miss needs a reason");
  }
  stats_.last_miss = reason;
  stats_.last_miss_diverged_at = diverged_at;
  stats_.last_miss_entry_tokens = entry_tokens;
  return {.entry_tokens = entry_tokens, .diverged_at = diverged_at, .miss = reason};
}

}  // namespace recur::cache
