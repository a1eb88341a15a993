// `recur bench`'s model measurements: prefill tokens/s at several prompt lengths and decode
// tokens/s at 1 and N concurrent sequences, with the FLOPs and weight bytes they imply, so they
// can be reported as fractions of the machine ceilings measured in the same run.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "util/thread_pool.h"

namespace recur::app {

struct ModelCost {
  double flops_per_token = 0;    // 2 x the matmul weights a token passes through (no lm_head)
  double head_flops = 0;         // 2 x lm_head elements: paid once per logit row
  double decode_step_bytes = 0;  // weights read by one decode step (layers + lm_head)
};
ModelCost model_cost(const model::Model& model);

struct PrefillResult {
  std::int64_t n_tokens = 0;
  double seconds = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;
  // From process CPU time of the same (best) run: n_threads · flops / cpu_seconds, the
  // undisturbed estimate on a shared machine (time spent descheduled does not count).
  double cpu_flops_per_s = 0;
};
// Best of `reps` single-chunk prefills of n_tokens (logits at the last position only).
PrefillResult bench_prefill(model::Model& model, ThreadPool& pool, std::int64_t n_tokens, int reps);

struct DecodeResult {
  int n_sequences = 0;
  double tokens_per_s = 0;  // all sequences together
  double steps_per_s = 0;
  double cpu_tokens_per_s = 0;  // n_threads · tokens / process CPU seconds
};
// n_sequences decode together after a short prefill each; timed over n_steps steps.
DecodeResult bench_decode(model::Model& model, ThreadPool& pool, int n_sequences, int n_steps);

}  // namespace recur::app
