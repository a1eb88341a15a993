#include "engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/engine_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace recur::engine {

using Clock = std::chrono::steady_clock;

Engine::Engine(const EngineOptions& options, model::Model& model,
               const tokenizer::Tokenizer& tokenizer, cache::PromptCache* cache, ThreadPool& pool)
    : options_(options),
      model_(model),
      tokenizer_(tokenizer),
      cache_(cache),
      pool_(pool),
      truncatable_(model.state_layout().truncatable()) {}

Engine::~Engine() { stop(); }

void Engine::start() {
  RECUR_CHECK(!thread_.joinable());
  thread_ = std::thread([this] { run(); });
}

void Engine::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::shared_ptr<RequestChannel>> Engine::submit(GenerationRequest req) {
  const auto n_prompt = static_cast<std::int64_t>(req.prompt.size());
  if (n_prompt == 0) return Error(StatusCode::kInvalidArgument, "the prompt is empty");
  for (TokenId t : req.prompt) {
    if (t < 0 || t >= model_.vocab_size()) {
      return Error(StatusCode::kInvalidArgument, "token id {} is outside the vocabulary (0..{})", t,
                   model_.vocab_size() - 1);
    }
  }
  if (n_prompt >= options_.ctx_size) {
    return Error(StatusCode::kOutOfRange,
                 "the prompt has {} tokens but the context holds {} (--ctx-size) including at "
                 "least one generated token",
                 n_prompt, options_.ctx_size);
  }
  if (req.max_tokens < 1) return Error(StatusCode::kInvalidArgument, "max_tokens must be >= 1");
  // Only what cannot fit is refused: a max_tokens past the context is a ceiling the context
  // lowers (the turn ends with finish reason length there), as agents ask for far more output
  // than they expect (Claude Code sends 32000 with a 40k-token prompt).
  req.max_tokens = std::min(req.max_tokens, options_.ctx_size - n_prompt);
  RECUR_RETURN_IF_ERROR(validate(req.sampling));

  auto seq = std::make_unique<Sequence>();
  seq->channel = std::make_shared<RequestChannel>();
  seq->submitted_at = Clock::now();
  seq->sampler.emplace(req.sampling, req.prompt);
  if (req.constraint != nullptr) seq->constraint.emplace(*req.constraint);
  seq->detok.emplace(tokenizer_, req.stop_strings, /*skip_special=*/true);
  seq->tokens = req.prompt;
  seq->req = std::move(req);
  auto channel = seq->channel;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Error(StatusCode::kCancelled, "the server is shutting down");
    // --max-queue counts requests that must wait: free sequence slots take requests at once.
    const std::int64_t free_slots =
        std::max<std::int64_t>(0, options_.parallel - n_active_.load() - n_queued_.load());
    if (static_cast<std::int64_t>(queue_.size()) >= options_.max_queue + free_slots) {
      return Error(StatusCode::kResourceExhausted,
                   "the request queue is full ({} waiting, --max-queue); retry shortly",
                   queue_.size());
    }
    queue_.push_back(std::move(seq));
    n_queued_.store(static_cast<std::int64_t>(queue_.size()));
  }
  wake_.notify_all();
  return channel;
}

void Engine::continue_turn(const std::shared_ptr<const TurnEnd>& turn,
                           std::vector<TokenId> next_prefix) {
  if (turn == nullptr || !accepts_warmups() || next_prefix.empty() ||
      static_cast<std::int64_t>(next_prefix.size()) >= options_.ctx_size) {
    return;
  }
  auto w = std::make_unique<Warmup>();
  w->key = turn->key;
  w->tokens = std::move(next_prefix);
  w->retire = turn->completion;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    warmups_pending_.push_back(std::move(w));
    // The newest warm-ups matter most: a conversation's next turn comes soon after its last.
    while (static_cast<int>(warmups_pending_.size()) > options_.max_warmups) {
      warmups_pending_.pop_front();
    }
    n_warmups_pending_.store(static_cast<std::int64_t>(warmups_pending_.size()));
  }
  wake_.notify_all();
}

EngineStats Engine::stats() const {
  // Queued before active (a braced list is read in order): admit() raises active before it
  // lowers queued, so a request moving between them is always in one of the two.
  return {.queued = n_queued_.load(),
          .active = n_active_.load(),
          .warmups_pending = n_warmups_pending_.load(),
          .warmups_done = n_warmups_done_.load(),
          .steps = n_steps_.load(),
          .prefill_tokens = n_prefill_tokens_.load(),
          .warmup_tokens = n_warmup_tokens_.load(),
          .dropped_queued = n_dropped_queued_.load(),
          .restores_in_place = n_restores_in_place_.load(),
          .restores_copied = n_restores_copied_.load(),
          .restores_peer = n_peer_copies_.load(),
          .shared_waits = n_shared_waits_.load()};
}

bool Engine::idle() const {
  // A sequence waiting for the disk tier is no work until its load is done (which wakes us).
  const bool active_waiting = std::all_of(active_.begin(), active_.end(),
                                          [this](const auto& s) { return waiting_for_disk(*s); });
  return queue_.empty() && warmups_pending_.empty() && active_waiting && warmups_running_.empty();
}

void Engine::run() {
  bool worked_since_trim = false;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // After a burst, once idle for a moment, freed memory (prefill scratch of finished
      // requests, HTTP buffers) goes back to the system rather than staying in malloc's arenas.
      if (worked_since_trim && options_.release_memory_when_idle &&
          !wake_.wait_for(lock, std::chrono::seconds(2), [&] { return stopping_ || !idle(); })) {
        lock.unlock();
        malloc_trim(0);
        worked_since_trim = false;
        continue;
      }
      wake_.wait(lock, [&] { return stopping_ || !idle(); });
      if (stopping_) break;
    }
    admit();
    step();
    worked_since_trim = true;
  }
  // Shutdown: whatever is queued or running ends as cancelled; nothing more is stored.
  std::deque<std::unique_ptr<Sequence>> queued;
  {
    std::lock_guard lock(mu_);
    queued.swap(queue_);
    warmups_pending_.clear();
  }
  for (auto& s : queued) active_.push_back(std::move(s));
  for (auto& s : active_) {
    // The disk tier's reader must not call back into an engine that is going away.
    if (s->disk_load != nullptr) s->disk_load->cancel();
    if (!s->done) {
      Event e;
      e.done = true;
      e.finish = FinishReason::kCancelled;
      e.error = Status(StatusCode::kCancelled, "the server is shutting down");
      s->channel->push(std::move(e));
    }
  }
  active_.clear();
  warmups_running_.clear();
  n_active_.store(0);
}

}  // namespace recur::engine
