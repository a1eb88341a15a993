// Sequence states and the prompt cache on the engine thread: the kept states (a state whose
// snapshot was just stored serves the next hit on it without a copy), restore at admission (RAM,
// or the disk tier's asynchronous load), the wait for a shared prefix another sequence is
// computing, and storing snapshots.
#include <algorithm>

#include "engine/cached_state.h"
#include "engine/engine_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace recur::engine {

using Clock = std::chrono::steady_clock;

namespace {

std::string describe_miss(const cache::LookupResult& r) {
  if (r.miss == cache::MissReason::kDiverged) {
    return fmt::format("diverged at token {} of an entry of length {}", r.diverged_at,
                       r.entry_tokens);
  }
  return cache::miss_reason_name(r.miss);
}

}  // namespace

std::unique_ptr<model::SequenceState> Engine::take_state() {
  // A reset state if there is one; else a new one while fewer than the cap are kept (a kept
  // state is some conversation's next restore); else the state kept longest.
  auto it = std::find_if(free_states_.begin(), free_states_.end(),
                         [](const KeptState& k) { return k.mirrors.expired(); });
  if (it == free_states_.end()) {
    if (free_states_.size() < kept_states_cap()) return model_.new_sequence();
    it = free_states_.begin() + static_cast<std::ptrdiff_t>(state_to_give_up());
  }
  auto s = std::move(it->state);
  const bool was_mirror = !it->mirrors.expired();
  free_states_.erase(it);
  if (was_mirror || s->n_tokens() > 0) s->reset();
  return s;
}

std::size_t Engine::state_to_give_up() const {
  for (std::size_t i = 0; i < free_states_.size(); ++i) {
    if (free_states_[i].origin == cache::Origin::kCompletion) return i;
  }
  return 0;
}

void Engine::release_state(std::unique_ptr<model::SequenceState> state,
                           std::shared_ptr<const model::Snapshot> mirrors, cache::Origin origin) {
  if (!state) return;
  const bool mirror = mirrors != nullptr && mirrors->n_tokens() == state->n_tokens();
  // Keep a few states with their grown KV buffers so steady serving does not allocate; when
  // full, a mirror displaces the oldest state (a reset one first).
  if (free_states_.size() >= kept_states_cap()) {
    if (!mirror) return;
    auto victim = std::find_if(free_states_.begin(), free_states_.end(),
                               [](const KeptState& k) { return k.mirrors.expired(); });
    if (victim == free_states_.end()) {
      victim = free_states_.begin() + static_cast<std::ptrdiff_t>(state_to_give_up());
    }
    free_states_.erase(victim);
  }
  if (mirror) {
    free_states_.push_back({std::move(state), std::move(mirrors), origin});
    return;
  }
  // Not a mirror: reset now, so the next take_state hands it out at once.
  state->reset();
  free_states_.push_back({std::move(state), {}});
}

bool Engine::take_mirror(std::unique_ptr<model::SequenceState>& state,
                         const model::Snapshot& snap) {
  for (auto it = free_states_.begin(); it != free_states_.end(); ++it) {
    if (it->mirrors.lock().get() != &snap) continue;
    state = std::move(it->state);
    free_states_.erase(it);
    return true;
  }
  return false;
}

bool Engine::origin_wanted(cache::Origin origin) const {
  if (cache_ == nullptr) return false;
  const cache::StorePolicy& p = cache_->store_for(truncatable_).policy();
  return p.enabled && p.origin_enabled[static_cast<int>(origin)];
}

void Engine::restore_from_cache(std::unique_ptr<model::SequenceState>& state,
                                const cache::CacheKey& key, std::span<const TokenId> tokens,
                                CacheTrace* trace) {
  trace->store = truncatable_ ? "prefix" : "snapshot";
  if (cache_ == nullptr) {
    trace->miss_reason = "disabled";
    state = take_state();
    return;
  }
  cache::LookupResult r = cache_->lookup(key, tokens, truncatable_);
  if (!r.hit()) {
    trace->miss_reason = describe_miss(r);
    state = take_state();
    return;
  }
  apply_hit(state, r, trace);
}

bool Engine::apply_hit(std::unique_ptr<model::SequenceState>& state, const cache::LookupResult& r,
                       CacheTrace* trace) {
  RECUR_CHECK(state == nullptr);
  const auto* cached = dynamic_cast<const CachedState*>(r.snapshot.get());
  RECUR_CHECK_MSG(cached != nullptr, "a cache entry that the engine did not store");
  Status s;
  if (take_mirror(state, cached->model_snapshot())) {
    n_restores_in_place_.fetch_add(1);
  } else {
    state = take_state();
    s = state->restore(cached->model_snapshot());
    n_restores_copied_.fetch_add(1);
  }
  if (s.is_ok() && state->n_tokens() > r.n_tokens_usable) s = state->truncate(r.n_tokens_usable);
  if (!s.is_ok()) {
    log::warn("cache restore failed, computing from scratch: {}", s.message());
    state->reset();
    trace->miss_reason = "restore_failed";
    return false;
  }
  trace->hit = true;
  trace->hit_tokens = state->n_tokens();
  trace->origin = cache::origin_name(r.origin);
  return true;
}

bool Engine::waiting_for_disk(const Sequence& seq) const {
  return seq.disk_load != nullptr && !seq.disk_load->done();
}

void Engine::begin_restore(Sequence& seq) {
  CacheTrace& trace = seq.trace;
  trace.store = truncatable_ ? "prefix" : "snapshot";
  if (cache_ == nullptr) {
    trace.miss_reason = "disabled";
    finish_restore(seq);
    return;
  }
  const auto prompt = std::span<const TokenId>(seq.req.prompt);
  seq.ram = cache_->lookup(seq.req.cache_key, prompt, truncatable_);
  // Both stores leave one prompt token to compute; a RAM hit of that length cannot be beaten.
  const std::int64_t best_possible = static_cast<std::int64_t>(prompt.size()) - 1;
  if (seq.ram.n_tokens_usable < best_possible) {
    seq.disk_load = cache_->load_from_disk(seq.req.cache_key, prompt, truncatable_,
                                           seq.ram.n_tokens_usable, [this] {
                                             // Under mu_, so the engine cannot miss the wake-up
                                             // between checking idle() and waiting.
                                             { std::lock_guard lock(mu_); }
                                             wake_.notify_all();
                                           });
  }
  // finish_restore() runs once the load is done; other sequences step meanwhile.
  if (seq.disk_load != nullptr) return;
  finish_restore(seq);
}

void Engine::finish_restore(Sequence& seq) {
  std::shared_ptr<cache::DiskLoad> load = std::move(seq.disk_load);
  cache::LookupResult r = std::move(seq.ram);
  if (load != nullptr) {
    if (load->hit().has_value() && load->hit()->n_tokens_usable > r.n_tokens_usable) {
      const cache::DiskHit& hit = *load->hit();
      // Into RAM as well: the next turn of this conversation finds it there.
      cache_->adopt(seq.req.cache_key, hit);
      r = {.snapshot = hit.snapshot,
           .n_tokens_usable = hit.n_tokens_usable,
           .entry_tokens = static_cast<std::int64_t>(hit.tokens.size()),
           .origin = hit.origin};
      seq.trace.tier = "disk";
    }
  }
  if (r.hit()) {
    if (seq.trace.tier.empty()) seq.trace.tier = "ram";
    apply_hit(seq.state, r, &seq.trace);
  } else {
    if (cache_ != nullptr) seq.trace.miss_reason = describe_miss(r);
    seq.state = take_state();
  }
  auto prompt = std::span<const TokenId>(seq.req.prompt);
  // The snapshot store caps a hit so one prompt token is left to compute; a truncatable hit
  // is capped here the same way, since the last position's logits are needed.
  if (seq.state->n_tokens() >= static_cast<std::int64_t>(prompt.size())) {
    RECUR_CHECK(seq.state->truncate(static_cast<std::int64_t>(prompt.size()) - 1).is_ok());
    seq.trace.hit_tokens = seq.state->n_tokens();
  }
  seq.n_cached = seq.state->n_tokens();
  seq.out.trace = seq.trace;
  seq.restored_at = Clock::now();
  seq.timing.restore_s = seconds_between(seq.admitted_at, seq.restored_at);
  // Dense models keep no entry at the shared point: a conversation that has passed it (now
  // decoding, its completion not stored yet) holds it in its live state.
  if (truncatable_) copy_shared_prefix_from_peer(seq);
  log::debug("admit req={} prompt={} cached={} trace='{}'", seq.req.id, prompt.size(), seq.n_cached,
             seq.trace.to_header());
  if (shared_prefix_in_flight(seq)) {
    seq.awaiting_shared = true;
    n_shared_waits_.fetch_add(1);
  }
}

bool Engine::shared_prefix_in_flight(const Sequence& seq) const {
  const std::int64_t s = seq.req.shared_boundary;
  auto has_shared_point = [&](const Sequence& q) {
    return q.req.shared_boundary == s && s > 0 && s < q.req.history_boundary;
  };
  if (!has_shared_point(seq) || !origin_wanted(cache::Origin::kShared) ||
      seq.state->n_tokens() >= s) {
    return false;
  }
  const cache::CacheKey key = key_for(seq.req.cache_key, cache::Origin::kShared);
  const auto prefix = std::span<const TokenId>(seq.req.prompt).first(static_cast<std::size_t>(s));
  for (const auto& q : active_) {
    if (q.get() == &seq || q->done || q->decoding || q->awaiting_shared || !q->state ||
        q->state->n_tokens() >= s || !has_shared_point(*q)) {
      continue;
    }
    const cache::CacheKey k = key_for(q->req.cache_key, cache::Origin::kShared);
    if (k.tenant == key.tenant && k.bucket == key.bucket &&
        std::ranges::equal(std::span<const TokenId>(q->req.prompt).first(prefix.size()), prefix)) {
      return true;
    }
  }
  return false;
}

void Engine::resume_after_shared(Sequence& seq) {
  seq.awaiting_shared = false;
  const auto prompt = std::span<const TokenId>(seq.req.prompt);
  cache::LookupResult r = cache_->lookup(seq.req.cache_key, prompt, truncatable_);
  if (!r.hit() || r.n_tokens_usable <= seq.state->n_tokens()) {
    // A dense model stores no entry at the shared point (its completion entry will hold every
    // prefix): the K/V comes from the conversation that computed it, still running.
    if (truncatable_) copy_shared_prefix_from_peer(seq);
    return;
  }
  std::unique_ptr<model::SequenceState> restored;
  CacheTrace trace = seq.trace;
  trace.miss_reason.clear();
  trace.tier = "ram";
  if (!apply_hit(restored, r, &trace)) {
    release_state(std::move(restored));
    return;
  }
  release_state(std::move(seq.state));
  seq.state = std::move(restored);
  seq.trace = trace;
  seq.n_cached = seq.state->n_tokens();
  seq.out.trace = seq.trace;
  log::debug("req={} resumed from the shared prefix computed meanwhile: cached={}", seq.req.id,
             seq.n_cached);
}

void Engine::copy_shared_prefix_from_peer(Sequence& seq) {
  const std::int64_t s = seq.req.shared_boundary;
  if (s <= 0 || s >= seq.req.history_boundary || seq.state->n_tokens() >= s ||
      !origin_wanted(cache::Origin::kShared)) {
    return;
  }
  const cache::CacheKey key = key_for(seq.req.cache_key, cache::Origin::kShared);
  const auto prefix = std::span<const TokenId>(seq.req.prompt).first(static_cast<std::size_t>(s));
  for (const auto& q : active_) {
    if (q.get() == &seq || q->done || !q->state || q->state->n_tokens() < s ||
        q->req.prompt.size() < prefix.size()) {
      continue;
    }
    const cache::CacheKey k = key_for(q->req.cache_key, cache::Origin::kShared);
    if (k.tenant != key.tenant || k.bucket != key.bucket ||
        !std::ranges::equal(std::span<const TokenId>(q->req.prompt).first(prefix.size()), prefix)) {
      continue;
    }
    const Status copied = seq.state->copy_prefix_from(*q->state, s);
    if (!copied.is_ok()) {
      log::warn("req={} copy of the shared prefix failed, computing it: {}", seq.req.id,
                copied.message());
      return;
    }
    seq.trace.hit = true;
    seq.trace.hit_tokens = s;
    seq.trace.origin = cache::origin_name(cache::Origin::kShared);
    seq.trace.tier = "peer";
    seq.trace.miss_reason.clear();
    seq.n_cached = s;
    seq.out.trace = seq.trace;
    n_peer_copies_.fetch_add(1);
    log::debug("req={} copied the shared prefix ({} tokens) from req={}", seq.req.id, s, q->req.id);
    return;
  }
}

std::shared_ptr<const model::Snapshot> Engine::store_snapshot(const model::SequenceState& state,
                                                              const cache::CacheKey& key,
                                                              cache::Origin origin,
                                                              std::span<const TokenId> tokens) {
  if (!origin_wanted(origin)) return nullptr;
  RECUR_CHECK(static_cast<std::int64_t>(tokens.size()) == state.n_tokens());
  return store_snapshot(state.snapshot(), key, origin, tokens);
}

std::shared_ptr<const model::Snapshot> Engine::store_snapshot(
    std::shared_ptr<const model::Snapshot> snapshot, const cache::CacheKey& key,
    cache::Origin origin, std::span<const TokenId> tokens) {
  if (!origin_wanted(origin)) return nullptr;
  RECUR_CHECK(static_cast<std::int64_t>(tokens.size()) == snapshot->n_tokens());
  auto snap = std::make_shared<CachedState>(snapshot);
  cache::InsertResult r = cache_->insert(key, origin, tokens, std::move(snap));
  log::debug("cache insert origin={} tokens={} outcome={} superseded={} evicted={}",
             cache::origin_name(origin), tokens.size(), cache::insert_outcome_name(r.outcome),
             r.superseded, r.evicted_lru);
  return r.admitted() ? std::move(snapshot) : nullptr;
}

}  // namespace recur::engine
