// What the HTTP side hands the engine (a GenerationRequest) and what comes back (a stream of
// Events through a RequestChannel). Plain structs: the engine thread never sees JSON, the HTTP
// threads never see tensors.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/keys.h"
#include "engine/constraint.h"
#include "engine/sampler.h"
#include "util/status.h"

namespace recur::engine {

enum class FinishReason : std::uint8_t { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason reason);

// A finished turn as the engine keeps it for its warm-up (engine/engine_internal.h).
struct TurnEnd;

struct GenerationRequest {
  std::string id;  // the response id the client sees, for logs and traces
  std::vector<TokenId> prompt;
  // Tokens [0, history_boundary) are the rendered history (chat/): a boundary snapshot is taken
  // there. 0 or >= prompt size: none.
  std::int64_t history_boundary = 0;
  // Tokens [0, shared_boundary) are the leading system messages (chat/): a snapshot there goes to
  // the tenant's shared session, for its other conversations. 0: none.
  std::int64_t shared_boundary = 0;
  // Where the client marked its stable prefixes (Anthropic cache_control breakpoints), ascending:
  // snapshots there go to the tenant's shared session too, so another conversation with the same
  // tools, system prompt and first messages resumes from the deepest it shares.
  std::vector<std::int64_t> cache_points;
  cache::CacheKey cache_key;
  SamplingParams sampling;
  std::int64_t max_tokens = 256;
  std::vector<std::string> stop_strings;
  std::vector<TokenId> stop_token_ids;  // end-of-generation ids (eos, <|im_end|>)
  // Constrained decoding (response_format, grammar, forced tool calls); null: free text.
  std::shared_ptr<const ConstraintSpec> constraint;
};

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;  // prompt tokens restored from the cache, not computed
  std::int64_t completion_tokens = 0;
};

// How the prompt cache served this request (the X-Recur-Cache trace).
struct CacheTrace {
  bool hit = false;
  std::int64_t hit_tokens = 0;
  std::string store;   // "snapshot" or "prefix"
  std::string origin;  // origin of the entry used: completion, boundary, warmup
  // Where the entry was found: ram, disk (--prompt-cache-dir), or peer (a dense model's shared
  // prefix copied from the live state of the conversation that computed it).
  std::string tier;
  std::string miss_reason;
  std::string to_header() const;
};

// Where a request's time went on the engine thread, in seconds: the x_recur_timing object and the
// phase histograms of /metrics. The first event carries the phases up to the first token, the last
// one all of them.
struct EngineTiming {
  double queue_s = 0;     // submitted until a sequence slot took it
  double restore_s = 0;   // cache lookup and state copy; with the disk tier, the wait for a load
  double prefill_s = 0;   // restored until the first token was sampled
  double forward_s = 0;   // of prefill_s: the forwards that carried this prompt's tokens
  double snapshot_s = 0;  // snapshots taken on this request's behalf (boundary, completion)
  double decode_s = 0;    // first token until done
  std::int64_t prefill_steps = 0;   // forwards that carried this prompt's tokens
  std::int64_t prefill_tokens = 0;  // prompt tokens computed (not restored)
};

struct Event {
  std::string text;                   // newly final text (stop strings already cut)
  std::vector<SampleResult> samples;  // tokens sampled since the previous event
  bool done = false;
  FinishReason finish = FinishReason::kStop;
  Usage usage;       // filled on done
  CacheTrace trace;  // filled on the first event and on done
  Status error;      // kError
  // On done with kStop: which of the request's stop_strings ended the text (none: an end token).
  std::optional<std::size_t> stop_index;
  double ttft_s = 0;    // seconds from submit to the first token (first event with samples)
  EngineTiming timing;  // filled on the first event with samples and on done
  // On a healthy done with the cache on: the finished turn as the engine keeps it (its cache key
  // and the completion snapshot stored, if one was), opaque to the server, which hands it back
  // with the next turn's anticipated prefix (Engine::continue_turn).
  std::shared_ptr<const TurnEnd> turn_end;
  bool completion_stored = false;  // the cache admitted a completion snapshot of this turn
};

// Engine thread -> one HTTP thread. Thread-safe.
class RequestChannel {
 public:
  void push(Event event);
  // Waits up to `timeout` for an event; nullopt on timeout.
  std::optional<Event> pop(std::chrono::milliseconds timeout);
  // The client is gone or the server is stopping: the engine stops the sequence at its next step.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;  // guarded by mu_
  std::atomic<bool> cancelled_{false};
};

}  // namespace recur::engine
