// The engine thread: admits queued requests, restores cached prefixes, plans prefill in pieces
// (boundary snapshot at the history boundary), steps one continuous batch of chunked prefills and
// decodes, samples, detokenizes, stores completion snapshots and runs next-turn warm-ups in spare
// capacity. One engine thread owns the model; submit() and stats() are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/prompt_cache.h"
#include "engine/request.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace recur::engine {

struct EngineOptions {
  int parallel = 8;                  // sequences stepped together (--parallel)
  int max_queue = 64;                // waiting requests before submit() refuses (--max-queue)
  std::int64_t prefill_chunk = 256;  // most prompt tokens per sequence per step
  // Most prompt tokens in a step while a sequence decodes or a prompt is about to finish
  // (--step-tokens): bounds the delay one long prompt adds to everyone's next token.
  std::int64_t step_tokens = 64;
  std::int64_t ctx_size = 8192;  // prompt + completion tokens per sequence
  int max_warmups = 8;           // pending warm-ups kept (oldest dropped beyond)
  // Tokens per step reserved for warm-ups while other work is waiting, so warm-ups also make
  // progress under steady load (design section 5: low priority, never starved).
  std::int64_t warmup_tokens_per_step = 32;
  // After work, once idle for 2 s, return freed memory to the system (malloc_trim). Off under
  // --keep-freed-memory: the next turn's states and snapshots would fault every page back in.
  bool release_memory_when_idle = true;
};

struct EngineStats {
  std::int64_t queued = 0;
  std::int64_t active = 0;
  std::int64_t warmups_pending = 0;
  std::int64_t warmups_done = 0;
  std::int64_t steps = 0;
  std::int64_t prefill_tokens = 0;  // prompt tokens computed (not restored from the cache)
  std::int64_t warmup_tokens = 0;   // tokens computed by warm-ups
  std::int64_t dropped_queued = 0;  // requests whose client left before they were admitted
  // Cache hits served by a kept state that still held the entry (no copy), and hits copied.
  std::int64_t restores_in_place = 0;
  std::int64_t restores_copied = 0;
  // Dense models: shared prefixes copied from the live state of the conversation computing them.
  std::int64_t restores_peer = 0;
  // Sequences that waited for another to compute their shared prefix rather than compute it too.
  std::int64_t shared_waits = 0;
};

class Engine {
 public:
  // `cache` may be null (--no-prompt-cache). Everything passed must outlive the engine.
  Engine(const EngineOptions& options, model::Model& model, const tokenizer::Tokenizer& tokenizer,
         cache::PromptCache* cache, ThreadPool& pool);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void start();
  // Cancels what is queued and running, stores nothing more, joins the engine thread.
  void stop();

  // Queues a request. Errors: kResourceExhausted when the queue is full; kOutOfRange when the
  // prompt or prompt + max_tokens exceeds the context; kInvalidArgument for bad sampling values.
  Result<std::shared_ptr<RequestChannel>> submit(GenerationRequest request);
  // Continues a finished turn (Event::turn_end) with a warm-up: prefill `next_prefix` (the
  // anticipated prefix of the conversation's next turn, design section 5) from the best cached
  // state in spare capacity and store it with origin warmup in the turn's session; once it is
  // stored the turn's completion snapshot is retired (the warm-up covers everything of it the
  // next turn can use). Dropped when warm-ups are off, the cache is off, or too many are pending.
  void continue_turn(const std::shared_ptr<const TurnEnd>& turn, std::vector<TokenId> next_prefix);
  // Whether continue_turn can keep anything: the cache is on and takes warm-ups
  // (--prompt-cache-warmup, one of the cache's settings). Lets callers skip building the prefix.
  // Thread-safe (reads only what is fixed at construction).
  bool accepts_warmups() const { return origin_wanted(cache::Origin::kWarmup); }

  EngineStats stats() const;
  const EngineOptions& options() const { return options_; }

 private:
  struct Sequence;
  struct Warmup;
  // A chunk of this step's batch and whom it belongs to.
  struct Planned {
    Sequence* seq = nullptr;  // exactly one of seq / warmup
    Warmup* warmup = nullptr;
    bool wants_logits = false;
  };

  void run();
  bool idle() const;  // requires mu_
  void admit();
  void step();
  void plan(std::vector<model::SeqChunk>& chunks, std::vector<Planned>& owners);
  void restore_from_cache(std::unique_ptr<model::SequenceState>& state, const cache::CacheKey& key,
                          std::span<const TokenId> tokens, CacheTrace* trace);
  // Admission's restore: a RAM lookup, then (with a disk tier, when RAM left tokens to compute)
  // an asynchronous disk load that finish_restore() completes once done.
  void begin_restore(Sequence& seq);
  void finish_restore(Sequence& seq);
  // Copies `r`'s state into `state` and truncates it to the usable length; false on failure.
  // When a kept state still holds r's entry, `state` is swapped for it and nothing is copied.
  bool apply_hit(std::unique_ptr<model::SequenceState>& state, const cache::LookupResult& r,
                 CacheTrace* trace);
  bool waiting_for_disk(const Sequence& seq) const;
  // Whether another active sequence is computing `seq`'s shared prefix (the tenant's system
  // messages) and will store it before `seq` could compute it itself.
  bool shared_prefix_in_flight(const Sequence& seq) const;
  // A waiting sequence whose shared prefix was stored (or whose leader stopped): restores the
  // longer entry if the cache now has one.
  void resume_after_shared(Sequence& seq);
  // Dense models: a new sequence's shared prefix, copied from an active sequence's state that
  // holds it (at admission, or once the one computing it has passed it).
  void copy_shared_prefix_from_peer(Sequence& seq);
  // Return the stored snapshot, or null when the cache did not admit it.
  std::shared_ptr<const model::Snapshot> store_snapshot(const model::SequenceState& state,
                                                        const cache::CacheKey& key,
                                                        cache::Origin origin,
                                                        std::span<const TokenId> tokens);
  std::shared_ptr<const model::Snapshot> store_snapshot(
      std::shared_ptr<const model::Snapshot> snapshot, const cache::CacheKey& key,
      cache::Origin origin, std::span<const TokenId> tokens);
  // Prompt positions whose state this sequence stores, ascending (the history boundary).
  std::vector<std::pair<std::int64_t, cache::Origin>> snapshot_points(const Sequence& seq) const;
  // Plans the snapshot points inside a prefill piece [start, start + len): interior captures
  // where the family records them, else the piece stops at the first point. Returns the piece's
  // length.
  std::int64_t plan_snapshot_points(Sequence& seq, std::int64_t start, std::int64_t len);
  bool origin_wanted(cache::Origin origin) const;
  void after_prefill_piece(Sequence& seq);
  // Stores the snapshots the sequence's last prefill piece passed (captures and its end).
  void store_passed_points(Sequence& seq);
  // The next token of every planned sequence that samples this step (nullopt: its filter allows
  // none), drawn on the pool; then on_sample takes each in plan order.
  std::vector<std::optional<SampleResult>> draw_tokens(const std::vector<Planned>& owners,
                                                       const model::Logits& logits);
  void on_sample(Sequence& seq, std::optional<SampleResult> drawn);
  void finish(Sequence& seq, FinishReason reason, Status error = Status::ok());
  void fail_all(const Status& error);
  // A state with no tokens, from the kept ones when there are.
  std::unique_ptr<model::SequenceState> take_state();
  // Keeps `state` for reuse. `mirrors`: a snapshot just stored from it at its full length, which
  // it equals in everything a forward reads, so a later hit on that entry can take the state as
  // it is (the next turn's restore, a warm-up's) instead of copying tens of megabytes.
  void release_state(std::unique_ptr<model::SequenceState> state,
                     std::shared_ptr<const model::Snapshot> mirrors = nullptr,
                     cache::Origin origin = cache::Origin::kCompletion);
  // The kept state to give up when all are mirrors: the oldest completion's (a warm-up usually
  // supersedes it), else the oldest.
  std::size_t state_to_give_up() const;
  // How many states are kept between requests (with their grown buffers).
  std::size_t kept_states_cap() const { return static_cast<std::size_t>(options_.parallel) + 2; }
  // Moves a kept state that mirrors `snap` into `state`; false when none does.
  bool take_mirror(std::unique_ptr<model::SequenceState>& state, const model::Snapshot& snap);

  const EngineOptions options_;
  model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  cache::PromptCache* cache_;
  ThreadPool& pool_;
  const bool truncatable_;  // dense model: prefix store; otherwise snapshot store

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> queue_;          // guarded by mu_
  std::deque<std::unique_ptr<Warmup>> warmups_pending_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_

  // Engine thread only.
  std::vector<std::unique_ptr<Sequence>> active_;
  std::vector<std::unique_ptr<Warmup>> warmups_running_;
  struct KeptState {
    std::unique_ptr<model::SequenceState> state;
    std::weak_ptr<const model::Snapshot> mirrors;       // expired or empty: reset, no tokens
    cache::Origin origin = cache::Origin::kCompletion;  // of the mirrored entry
  };
  std::vector<KeptState> free_states_;  // oldest first

  std::atomic<std::int64_t> n_queued_{0};
  std::atomic<std::int64_t> n_active_{0};
  std::atomic<std::int64_t> n_warmups_pending_{0};
  std::atomic<std::int64_t> n_warmups_done_{0};
  std::atomic<std::int64_t> n_steps_{0};
  std::atomic<std::int64_t> n_prefill_tokens_{0};
  std::atomic<std::int64_t> n_warmup_tokens_{0};
  std::atomic<std::int64_t> n_dropped_queued_{0};
  std::atomic<std::int64_t> n_restores_in_place_{0};
  std::atomic<std::int64_t> n_restores_copied_{0};
  std::atomic<std::int64_t> n_shared_waits_{0};
  std::atomic<std::int64_t> n_peer_copies_{0};
  std::thread thread_;
};

}  // namespace recur::engine
