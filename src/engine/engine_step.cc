// One engine step: admission with cache restore, batch planning (decodes first, then prefill
// pieces shortest remaining prompt first - at most --step-tokens while anything decodes - then
// warm-ups with a small reserved share), the forward, and what follows it.
#include <algorithm>

#include "engine/engine_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace recur::engine {

using Clock = std::chrono::steady_clock;

namespace {

// Appends the detokenizer's held-back text to r's, with the bytes behind both.
void append_final(SampleResult& r, tokenizer::StreamingDetokenizer& detok) {
  const std::string text = detok.finish();
  if (!detok.bytes().empty() || !r.bytes.empty()) {
    if (r.bytes.empty()) r.bytes = r.text;
    r.bytes += detok.bytes().empty() ? text : detok.bytes();
  }
  r.text += text;
}

}  // namespace

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
    // Counted as active before they leave the queued count: stats() reads queued first, so a
    // draining server never sees an admitted request in neither.
    n_active_.store(static_cast<std::int64_t>(active_.size() + admitted.size()));
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
  if (origin_wanted(cache::Origin::kShared)) {
    std::vector<std::int64_t> shared = seq.req.cache_points;
    shared.push_back(s);
    std::sort(shared.begin(), shared.end());
    shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
    for (std::int64_t p : shared) {
      if (p > 0 && p < b) points.emplace_back(p, cache::Origin::kShared);
    }
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
      std::vector<std::optional<SampleResult>> drawn = draw_tokens(owners, *logits);
      std::size_t k = 0;
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
        if (p.wants_logits) on_sample(seq, std::move(drawn[k++]));
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

std::vector<std::optional<SampleResult>> Engine::draw_tokens(const std::vector<Planned>& owners,
                                                             const model::Logits& logits) {
  struct Draw {
    Sequence* seq;
    std::span<const float> row;
    std::optional<TokenFilter> filter;
  };
  std::vector<Draw> draws;
  std::int64_t row = 0;
  for (const Planned& p : owners) {
    if (!p.wants_logits) continue;
    Draw d{.seq = p.seq, .row = logits.row(row++), .filter = std::nullopt};
    // Masks are read (or computed, into the grammar's shared cache) here, in order.
    if (p.seq->constraint) d.filter = p.seq->constraint->filter(p.seq->req.stop_token_ids);
    draws.push_back(d);
  }
  // A draw reads only its own row, filter and sampler: the sequences' draws run side by side on
  // the pool, and each gives the bytes it gives alone.
  std::vector<std::optional<SampleResult>> out(draws.size());
  pool_.run_blocks(
      static_cast<std::int64_t>(draws.size()), 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          Draw& d = draws[static_cast<std::size_t>(i)];
          out[static_cast<std::size_t>(i)] = d.filter
                                                 ? d.seq->sampler->sample(d.row, *d.filter)
                                                 : std::optional(d.seq->sampler->sample(d.row));
        }
      });
  return out;
}

void Engine::on_sample(Sequence& seq, std::optional<SampleResult> drawn) {
  if (!seq.first_token_seen) {
    seq.first_token_seen = true;
    seq.first_token_at = Clock::now();
    seq.out.ttft_s = seconds_between(seq.submitted_at, seq.first_token_at);
    seq.timing.prefill_s = seconds_between(seq.restored_at, seq.first_token_at);
    seq.out.timing = seq.timing;
  }
  if (seq.constraint && seq.constraint->overflowed()) {
    finish(seq, FinishReason::kError,
           Error(StatusCode::kResourceExhausted, "the grammar is too ambiguous to follow: {}",
                 seq.constraint->overflow()));
    return;
  }
  if (!drawn) {
    // The grammar needs bytes no token of this vocabulary spells: end rather than break it.
    log::warn("request {}: no token continues its grammar; ending the turn", seq.req.id);
    finish(seq, FinishReason::kStop);
    return;
  }
  SampleResult r = std::move(*drawn);
  if (seq.constraint) seq.constraint->accept(r.id);
  ++seq.n_generated;
  const auto& stops = seq.req.stop_token_ids;
  if (std::find(stops.begin(), stops.end(), r.id) != stops.end()) {
    append_final(r, *seq.detok);
    seq.out.text += r.text;
    // The end token is a sample only when it released text held back (for a stop string that
    // did not come): the samples' texts add up to the text.
    if (!r.text.empty()) seq.out.samples.push_back(std::move(r));
    finish(seq, FinishReason::kStop);
    return;
  }
  r.text = seq.detok->push(r.id);
  r.bytes = seq.detok->bytes();
  seq.tokens.push_back(r.id);
  seq.pending = r.id;
  const bool stopped = seq.detok->stopped();
  const bool full = !stopped && (seq.n_generated >= seq.req.max_tokens ||
                                 static_cast<std::int64_t>(seq.tokens.size()) >= options_.ctx_size);
  if (stopped) seq.out.stop_index = seq.detok->stop_index();
  // A constrained text that is whole and cannot go on ends the turn: no end token is needed.
  const bool whole = !stopped && !full && seq.constraint && seq.constraint->finished();
  if (whole || full) append_final(r, *seq.detok);  // the last token carries what was held back
  seq.out.text += r.text;
  seq.out.samples.push_back(std::move(r));
  if (stopped || whole) finish(seq, FinishReason::kStop);
  if (full) finish(seq, FinishReason::kLength);
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
