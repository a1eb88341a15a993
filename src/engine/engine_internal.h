// The engine thread's per-sequence and per-warm-up records. Private to engine/*.cc.
#pragma once

#include <chrono>
#include <optional>

#include "engine/engine.h"

namespace recur::engine {

inline double seconds_between(std::chrono::steady_clock::time_point a,
                              std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A shared prefix belongs to the tenant's shared session, not to the conversation that made it.
inline cache::CacheKey key_for(const cache::CacheKey& key, cache::Origin origin) {
  if (origin != cache::Origin::kShared) return key;
  cache::CacheKey shared = key;
  shared.session = cache::SessionKey::shared();
  return shared;
}

struct TurnEnd {
  cache::CacheKey key;
  std::vector<TokenId> completion;  // the completion snapshot's tokens; empty if none was stored
};

struct Engine::Sequence {
  GenerationRequest req;
  std::shared_ptr<RequestChannel> channel;
  std::unique_ptr<model::SequenceState> state;
  std::optional<Sampler> sampler;
  std::optional<Constraint> constraint;
  std::optional<tokenizer::StreamingDetokenizer> detok;
  // The prompt, then every sampled token except a final stop token; tokens [0, state->n_tokens())
  // are in the state, the rest (at most one: `pending`) is forwarded in the next step.
  std::vector<TokenId> tokens;
  std::int64_t n_generated = 0;  // sampled tokens, a final stop token included
  std::int64_t n_cached = 0;     // prompt tokens restored from the cache
  bool decoding = false;         // the whole prompt is in the state
  TokenId pending = -1;
  bool done = false;
  CacheTrace trace;
  // While the disk tier loads a longer prefix than RAM had (not planned until it is done): the
  // load, and the RAM lookup to fall back on.
  std::shared_ptr<cache::DiskLoad> disk_load;
  cache::LookupResult ram;
  std::chrono::steady_clock::time_point submitted_at, admitted_at, restored_at, first_token_at;
  bool first_token_seen = false;
  EngineTiming timing;
  Event out;  // what this step produced; pushed to the channel after the step
  // Interior captures requested for this step's piece, with the origin each is stored under.
  std::vector<std::pair<std::int64_t, cache::Origin>> captures;
  bool snapshots_pending = false;  // a prefill piece passed snapshot points this step
  std::shared_ptr<const model::Snapshot> completion;  // stored at finish, if admitted
  // Another sequence is computing the same leading system messages (same tenant and bucket):
  // not planned until it has stored them as a shared entry (or stopped), then restored from it.
  bool awaiting_shared = false;
};

struct Engine::Warmup {
  cache::CacheKey key;
  std::vector<TokenId> tokens;
  std::vector<TokenId> retire;  // the turn's completion snapshot, removed once this is stored
  std::unique_ptr<model::SequenceState> state;
  std::shared_ptr<const model::Snapshot> stored;  // the warm-up entry, once admitted
  bool done = false;
};

}  // namespace recur::engine
