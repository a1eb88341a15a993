// One engine step: admission with cache restore, batch planning (decodes first, then prefill
// pieces shortest remaining prompt first - at most --step-tokens while anything decodes - then
// warm-ups with a small reserved share), the forward, and what follows it.
#include <algorithm>

#include "engine/cached_state.h"
#include "engine/engine_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace recur::engine {

using Clock = std::chrono::steady_clock;

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A shared prefix belongs to the tenant's shared session, not to the conversation that made it.
cache::CacheKey key_for(const cache::CacheKey& key, cache::Origin origin) {
  if (origin != cache::Origin::kShared) return key;
  cache::CacheKey shared = key;
  shared.session = cache::SessionKey::shared();
  return shared;
}

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
    return !truncatable_ && q.req.shared_boundary == s && s > 0 && s < q.req.history_boundary;
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
  if (!r.hit() || r.n_tokens_usable <= seq.state->n_tokens()) return;
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

void Engine::admit() {
  for (auto& seq : active_) {
    if (seq->disk_load != nullptr && seq->disk_load->done()) finish_restore(*seq);
  }
  for (auto& seq : active_) {
    if (seq->awaiting_shared && !seq->done && !shared_prefix_in_flight(*seq)) {
      resume_after_shared(*seq);
    }
  }
  std::vector<std::unique_ptr<Sequence>> admitted;
  std::vector<std::unique_ptr<Warmup>> warmups;
  {
    std::lock_guard lock(mu_);
    // A client that left while waiting gives its queue place back now, not when a slot frees.
    const auto before = queue_.size();
    std::erase_if(queue_, [](const auto& s) { return s->channel->cancelled(); });
    n_dropped_queued_.fetch_add(static_cast<std::int64_t>(before - queue_.size()));
    while (!queue_.empty() &&
           active_.size() + admitted.size() < static_cast<std::size_t>(options_.parallel)) {
      admitted.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    // One warm-up at a time: they are background work, and each holds a full sequence state.
    if (warmups_running_.empty() && !warmups_pending_.empty()) {
      warmups.push_back(std::move(warmups_pending_.back()));  // newest first
      warmups_pending_.pop_back();
    }
    n_queued_.store(static_cast<std::int64_t>(queue_.size()));
    n_warmups_pending_.store(static_cast<std::int64_t>(warmups_pending_.size() + warmups.size() +
                                                       warmups_running_.size()));
  }
  for (auto& seq : admitted) {
    if (seq->channel->cancelled()) {
      seq->done = true;
      continue;
    }
    seq->admitted_at = Clock::now();
    seq->timing.queue_s = seconds_between(seq->submitted_at, seq->admitted_at);
    begin_restore(*seq);  // takes a state: a kept one that holds the hit, if any
    active_.push_back(std::move(seq));
  }
  for (auto& w : warmups) {
    CacheTrace ignored;
    restore_from_cache(w->state, w->key, w->tokens, &ignored);
    if (w->state->n_tokens() >= static_cast<std::int64_t>(w->tokens.size())) {
      // Already stored (a dense prefix entry covers it): only the retirement is left to do.
      if (!w->retire.empty()) {
        cache_->retire(w->key, cache::Origin::kCompletion, w->retire, truncatable_);
      }
      release_state(std::move(w->state));
      n_warmups_done_.fetch_add(1);
      continue;
    }
    warmups_running_.push_back(std::move(w));
  }
  n_active_.store(static_cast<std::int64_t>(active_.size()));
}

void Engine::plan(std::vector<model::SeqChunk>& chunks, std::vector<Planned>& owners) {
  std::int64_t budget = model_.options().max_batch_tokens;
  std::int64_t logit_rows = model_.options().max_logit_rows;
  std::int64_t n_decoding = 0;
  for (auto& seq : active_) {
    if (seq->done || !seq->decoding || budget <= 0 || logit_rows <= 0) continue;
    chunks.push_back(
        {seq->state.get(), std::span<const TokenId>(&seq->pending, 1), model::LogitsWanted::kLast});
    owners.push_back({.seq = seq.get(), .wants_logits = true});
    --budget;
    --logit_rows;
    ++n_decoding;
  }
  const bool warmup_waiting = !warmups_running_.empty();
  std::int64_t reserve = warmup_waiting ? std::min(options_.warmup_tokens_per_step, budget / 4) : 0;
  // Shortest remaining prompt first: a follow-up turn's few new tokens go ahead of another
  // conversation's long first prompt, and among long prompts the nearest to done finishes first.
  std::vector<Sequence*> prefilling;
  for (auto& seq : active_) {
    if (!seq->done && !seq->decoding && seq->disk_load == nullptr && !seq->awaiting_shared) {
      prefilling.push_back(seq.get());
    }
  }
  auto remaining = [](const Sequence* s) {
    return static_cast<std::int64_t>(s->req.prompt.size()) - s->state->n_tokens();
  };
  std::stable_sort(prefilling.begin(), prefilling.end(), [&](const Sequence* a, const Sequence* b) {
    return remaining(a) < remaining(b);
  });
  // While a sequence decodes or a prompt is about to finish, each step stays short (at most
  // --step-tokens prompt tokens): their next token waits for the whole step.
  const bool latency_bound =
      n_decoding > 0 ||
      (!prefilling.empty() && remaining(prefilling.front()) <= options_.step_tokens);
  std::int64_t prefill_left = latency_bound ? options_.step_tokens : budget;
  for (Sequence* s : prefilling) {
    Sequence& seq = *s;
    const std::int64_t avail = std::min(budget - reserve, prefill_left);
    if (avail <= 0) break;
    const auto n_prompt = static_cast<std::int64_t>(seq.req.prompt.size());
    const std::int64_t start = seq.state->n_tokens();
    const std::int64_t first_len = std::min({n_prompt - start, options_.prefill_chunk, avail});
    const bool would_be_last = start + first_len == n_prompt;
    if (would_be_last && logit_rows <= 0) continue;
    const std::int64_t len = plan_snapshot_points(seq, start, first_len);
    const bool last = start + len == n_prompt;
    chunks.push_back({seq.state.get(),
                      std::span<const TokenId>(seq.req.prompt)
                          .subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(len)),
                      last ? model::LogitsWanted::kLast : model::LogitsWanted::kNone});
    owners.push_back({.seq = &seq, .wants_logits = last});
    budget -= len;
    prefill_left -= len;
    if (last) --logit_rows;
  }
  for (auto& w : warmups_running_) {
    if (budget <= 0) break;
    const std::int64_t start = w->state->n_tokens();
    std::int64_t len = std::min(
        {static_cast<std::int64_t>(w->tokens.size()) - start, options_.prefill_chunk, budget});
    chunks.push_back({w->state.get(),
                      std::span<const TokenId>(w->tokens).subspan(static_cast<std::size_t>(start),
                                                                  static_cast<std::size_t>(len)),
                      model::LogitsWanted::kNone});
    owners.push_back({.warmup = w.get()});
    budget -= len;
  }
}

std::vector<std::pair<std::int64_t, cache::Origin>> Engine::snapshot_points(
    const Sequence& seq) const {
  std::vector<std::pair<std::int64_t, cache::Origin>> points;
  // Hybrid/recurrent models only: a dense model's completion snapshot already holds every prefix.
  if (truncatable_) return points;
  const std::int64_t b = seq.req.history_boundary;
  const std::int64_t s = seq.req.shared_boundary;
  const auto n_prompt = static_cast<std::int64_t>(seq.req.prompt.size());
  if (s > 0 && s < b && origin_wanted(cache::Origin::kShared)) {
    points.emplace_back(s, cache::Origin::kShared);
  }
  if (b > 0 && b < n_prompt && origin_wanted(cache::Origin::kBoundary)) {
    points.emplace_back(b, cache::Origin::kBoundary);
  }
  return points;
}

std::int64_t Engine::plan_snapshot_points(Sequence& seq, std::int64_t start, std::int64_t len) {
  seq.captures.clear();
  for (const auto& [p, origin] : snapshot_points(seq)) {
    if (p <= start || p > start + len) continue;
    if (p == start + len) break;  // the piece ends there: after_prefill_piece stores the state
    if (!model_.supports_capture()) {
      // This family cannot record its state inside a chunk: the piece stops at the point.
      return p - start;
    }
    // A ring overwrites the window before p once the chunk runs too far past it.
    const std::int64_t tail = seq.state->capture_tail_limit();
    if (start + len - p > tail) len = p - start + tail;
    RECUR_CHECK(seq.state->request_capture(p).is_ok());
    seq.captures.emplace_back(p, origin);
  }
  return len;
}

void Engine::step() {
  for (auto& seq : active_) {
    if (!seq->done && seq->channel->cancelled()) finish(*seq, FinishReason::kCancelled);
  }
  std::vector<model::SeqChunk> chunks;
  std::vector<Planned> owners;
  plan(chunks, owners);
  if (!chunks.empty()) {
    const Clock::time_point t0 = Clock::now();
    auto logits = model_.forward(pool_, chunks);
    const double forward_s = seconds_between(t0, Clock::now());
    n_steps_.fetch_add(1);
    if (!logits.is_ok()) {
      fail_all(logits.status());
    } else {
      std::int64_t row = 0;
      for (std::size_t i = 0; i < owners.size(); ++i) {
        const Planned& p = owners[i];
        const auto n_chunk = static_cast<std::int64_t>(chunks[i].tokens.size());
        if (p.warmup != nullptr) {
          n_warmup_tokens_.fetch_add(n_chunk);
          Warmup& w = *p.warmup;
          if (w.state->n_tokens() == static_cast<std::int64_t>(w.tokens.size())) {
            w.stored = store_snapshot(*w.state, w.key, cache::Origin::kWarmup, w.tokens);
            if (w.stored != nullptr && !w.retire.empty()) {
              cache_->retire(w.key, cache::Origin::kCompletion, w.retire, truncatable_);
            }
            w.done = true;
          }
          continue;
        }
        Sequence& seq = *p.seq;
        if (!seq.decoding) {
          n_prefill_tokens_.fetch_add(n_chunk);
          seq.timing.forward_s += forward_s;
          seq.timing.prefill_steps += 1;
          seq.timing.prefill_tokens += n_chunk;
          after_prefill_piece(seq);
        }
        if (p.wants_logits) on_sample(seq, logits->row(row++));
      }
    }
  }
  // Publish what this step produced, store the snapshots its prefill pieces passed, then drop
  // finished work.
  for (auto& seq : active_) {
    if (!seq->out.samples.empty() || !seq->out.text.empty() || seq->out.done) {
      seq->channel->push(std::move(seq->out));
      seq->out = Event{};
    }
  }
  for (auto& seq : active_) {
    if (seq->snapshots_pending && seq->state) store_passed_points(*seq);
  }
  for (auto& seq : active_) {
    if (seq->done) release_state(std::move(seq->state), std::move(seq->completion));
  }
  std::erase_if(active_, [](const auto& s) { return s->done; });
  for (auto& w : warmups_running_) {
    if (w->done) {
      release_state(std::move(w->state), std::move(w->stored), cache::Origin::kWarmup);
      n_warmups_done_.fetch_add(1);
    }
  }
  std::erase_if(warmups_running_, [](const auto& w) { return w->done; });
  n_active_.store(static_cast<std::int64_t>(active_.size()));
  {
    std::lock_guard lock(mu_);
    n_warmups_pending_.store(
        static_cast<std::int64_t>(warmups_pending_.size() + warmups_running_.size()));
  }
}

void Engine::after_prefill_piece(Sequence& seq) {
  // Its snapshots are stored once the step's events are out: copying a state (tens of MB) must
  // not delay the first token it may have sampled.
  seq.snapshots_pending = true;
  if (seq.state->n_tokens() == static_cast<std::int64_t>(seq.req.prompt.size())) {
    seq.decoding = true;
  }
}

void Engine::store_passed_points(Sequence& seq) {
  seq.snapshots_pending = false;
  const std::int64_t n = seq.state->n_tokens();
  const Clock::time_point t0 = Clock::now();
  const auto prompt = std::span<const TokenId>(seq.req.prompt);
  for (const auto& [p, origin] : seq.captures) {
    auto snap = seq.state->take_capture(p);
    if (!snap.is_ok()) {
      log::error("req={}: capture at {} tokens failed: {}", seq.req.id, p, snap.status().message());
      continue;
    }
    store_snapshot(std::move(*snap), key_for(seq.req.cache_key, origin), origin,
                   prompt.first(static_cast<std::size_t>(p)));
  }
  seq.captures.clear();
  for (const auto& [p, origin] : snapshot_points(seq)) {
    if (p == n) {
      store_snapshot(*seq.state, key_for(seq.req.cache_key, origin), origin,
                     prompt.first(static_cast<std::size_t>(p)));
    }
  }
  seq.timing.snapshot_s += seconds_between(t0, Clock::now());
}

void Engine::on_sample(Sequence& seq, std::span<const float> logits) {
  if (!seq.first_token_seen) {
    seq.first_token_seen = true;
    seq.first_token_at = Clock::now();
    seq.out.ttft_s = seconds_between(seq.submitted_at, seq.first_token_at);
    seq.timing.prefill_s = seconds_between(seq.restored_at, seq.first_token_at);
    seq.out.timing = seq.timing;
  }
  SampleResult r = seq.sampler->sample(logits);
  ++seq.n_generated;
  const auto& stops = seq.req.stop_token_ids;
  if (std::find(stops.begin(), stops.end(), r.id) != stops.end()) {
    seq.out.text += seq.detok->finish();
    finish(seq, FinishReason::kStop);
    return;
  }
  seq.out.samples.push_back(r);
  seq.out.text += seq.detok->push(r.id);
  seq.tokens.push_back(r.id);
  seq.pending = r.id;
  if (seq.detok->stopped()) {
    seq.out.stop_index = seq.detok->stop_index();
    finish(seq, FinishReason::kStop);
  } else if (seq.n_generated >= seq.req.max_tokens ||
             static_cast<std::int64_t>(seq.tokens.size()) >= options_.ctx_size) {
    seq.out.text += seq.detok->finish();
    finish(seq, FinishReason::kLength);
  }
}

void Engine::finish(Sequence& seq, FinishReason reason, Status error) {
  if (seq.done) return;
  seq.done = true;
  const bool healthy = reason == FinishReason::kStop || reason == FinishReason::kLength;
  if (healthy && seq.state) {
    // Exactly the tokens forwarded: the prompt and every generated token but the last sampled.
    std::span<const TokenId> forwarded(seq.tokens.data(),
                                       static_cast<std::size_t>(seq.state->n_tokens()));
    const Clock::time_point t0 = Clock::now();
    seq.completion =
        store_snapshot(*seq.state, seq.req.cache_key, cache::Origin::kCompletion, forwarded);
    auto turn = std::make_shared<TurnEnd>();
    turn->key = seq.req.cache_key;
    if (seq.completion != nullptr) turn->completion.assign(forwarded.begin(), forwarded.end());
    seq.out.completion_stored = seq.completion != nullptr;
    if (cache_ != nullptr) seq.out.turn_end = std::move(turn);
    seq.timing.snapshot_s += seconds_between(t0, Clock::now());
  }
  if (seq.first_token_seen) seq.timing.decode_s = seconds_between(seq.first_token_at, Clock::now());
  seq.out.timing = seq.timing;
  seq.out.done = true;
  seq.out.finish = reason;
  seq.out.error = std::move(error);
  seq.out.trace = seq.trace;
  seq.out.usage = {.prompt_tokens = static_cast<std::int64_t>(seq.req.prompt.size()),
                   .cached_tokens = seq.n_cached,
                   .completion_tokens = seq.n_generated};
}

void Engine::fail_all(const Status& error) {
  log::error("forward failed, failing {} sequences: {}", active_.size(), error.to_string());
  for (auto& seq : active_) finish(*seq, FinishReason::kError, error);
  for (auto& w : warmups_running_) w->done = true;
}

}  // namespace recur::engine
