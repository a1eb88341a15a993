// `recur bench`'s model measurements: prefill tokens/s at several prompt lengths and decode
// tokens/s at 1 and N concurrent sequences, with the FLOPs and weight bytes they imply, so they
// can be reported as fractions of the machine ceilings measured in the same run.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "model/model.h"
#include "util/stage_times.h"
#include "util/thread_pool.h"

namespace recur::app {

// A mixture-of-experts model's experts are left out of flops_per_token and decode_step_bytes:
// which of them a step reads depends on the routing, so the benches count them as they run
// (model::expert_traffic) and add them.
struct ModelCost {
  double flops_per_token = 0;    // 2 x the matmul weights a token passes through (no lm_head)
  double head_flops = 0;         // 2 x lm_head elements: paid once per logit row
  double decode_step_bytes = 0;  // weights read by one decode step (layers + lm_head)
  double expert_bytes = 0;       // all experts' weights (a step reads the selected ones)
  // Attention's q·k and p·V for one query token and one key it sees, all attention layers:
  // 4 x query heads x head_dim each.
  double attention_flops_per_key = 0;
  // The sliding-window layers among them (Gemma 3): FLOPs per key and window.
  std::vector<std::pair<double, std::int64_t>> windowed;
  // Attention FLOPs of a prompt of n tokens after `prefix` tokens (causal: token i sees
  // prefix + i + 1 keys, at most the window on a sliding-window layer).
  double attention_flops(std::int64_t n, std::int64_t prefix) const;
};
ModelCost model_cost(const model::Model& model);

struct PrefillResult {
  std::int64_t n_tokens = 0;
  std::int64_t prefix_tokens = 0;
  double seconds = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;  // matmuls (the experts the tokens ran through) and the lm_head row
  double flops_with_attention_per_s = 0;
  std::vector<stages::Stage> stages;  // the fastest rep's, when stages::enabled()
};
// Best of `reps` single-chunk prefills of n_tokens (logits at the last position only) into a
// sequence that already holds prefix_tokens - a follow-up chat turn, its conversation restored
// from a snapshot before each rep, as the prompt cache does. The prefix itself is prefilled once,
// untimed, in chunks of at most chunk_tokens.
PrefillResult bench_prefill(model::Model& model, ThreadPool& pool, std::int64_t n_tokens,
                            std::int64_t prefix_tokens, std::int64_t chunk_tokens, int reps);

// n_sequences decoding together after a prefill of context_tokens each (in chunks of at most
// chunk_tokens); step() times one decode step, so the caller can interleave each step with a
// bandwidth probe pass (kernels::ReadProbe).
class DecodeBench {
 public:
  DecodeBench(model::Model& model, ThreadPool& pool, int n_sequences, std::int64_t context_tokens,
              std::int64_t chunk_tokens);
  double step();  // seconds of one decode step of every sequence
  // Recurrent-state and KV bytes one step moves besides the weights (all sequences, now).
  double state_bytes_per_step() const;
  // The experts' weight bytes the last step read (0 without experts).
  double expert_bytes_last_step() const { return expert_bytes_; }

 private:
  model::Model& model_;
  ThreadPool& pool_;
  std::vector<std::unique_ptr<model::SequenceState>> seqs_;
  std::vector<std::vector<std::int32_t>> next_;
  std::vector<model::SeqChunk> batch_;
  double expert_bytes_ = 0;
};

}  // namespace recur::app
