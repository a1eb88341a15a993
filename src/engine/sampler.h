// Token sampling for one sequence: penalties, temperature, top-k, top-p, min-p, a per-request
// seeded generator advanced exactly once per generated token, and logprobs with top alternatives.
// Deterministic: the same logits, parameters, seed and history give the same token on any machine
// and in any batch. Thread-compatible (one sampler per sequence, used by the engine thread).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/status.h"

namespace recur::engine {

using TokenId = std::int32_t;

struct SamplingParams {
  float temperature = 1.0f;        // 0: greedy
  int top_k = 0;                   // 0: no limit
  float top_p = 1.0f;              // nucleus mass in (0, 1]
  float min_p = 0.0f;              // keep tokens with p >= min_p * p_max
  float presence_penalty = 0.0f;   // OpenAI: subtract once if the token was generated
  float frequency_penalty = 0.0f;  // OpenAI: subtract per generated occurrence
  float repetition_penalty =
      1.0f;  // HF/CTRL: divide positive, multiply negative logits of seen tokens
  std::uint64_t seed = 0;
  int top_logprobs = 0;  // alternatives to report per token (0..20)
  bool logprobs = false;
  // OpenAI logit_bias: added to the token's logit before penalties, temperature and the
  // truncations (-100 bans it in practice, 100 all but forces it). Ids outside the vocabulary are
  // skipped here; the server refuses them.
  std::vector<std::pair<TokenId, float>> logit_bias;
};

// Which tokens may come next (constrained decoding): one bit per token id, with the end tokens
// allowed only when allow_stop says the constrained text is complete, and one more id (-1: none)
// allowed besides. The sampler draws from the allowed tokens alone, renormalised, before
// temperature, top-k, top-p and min-p; logprobs stay those of the model's own distribution.
struct TokenFilter {
  std::span<const std::uint64_t> bits;
  std::span<const TokenId> stop_ids;
  bool allow_stop = false;
  TokenId also = -1;
  bool all = false;  // every token is allowed (bits unused); the end tokens as allow_stop says
};

// Checks ranges with errors naming the field (e.g. "top_p must be in (0, 1], got 1.5").
Status validate(const SamplingParams& params);

struct TokenLogprob {
  TokenId id;
  float logprob;
};

struct SampleResult {
  TokenId id = -1;
  float logprob = 0;              // of the chosen token under the model's distribution
  std::vector<TokenLogprob> top;  // top_logprobs alternatives, most likely first
  // Filled by the engine: the text this token made final, its share of Event::text (empty for a
  // token that ends inside a character or may start a stop string; the token that completes
  // such text carries it). The samples' texts add up to the generated text. An end-of-generation
  // token is a sample only when it releases held-back text.
  std::string text;
  // The bytes behind text where the decoder replaced invalid UTF-8 in it with U+FFFD (a stray
  // byte token, an unfinished character): logprobs report them. Empty where they are text.
  std::string bytes;
};

// splitmix64 stream: tiny, fast, and its output is fixed by its definition on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double next_unit();

 private:
  std::uint64_t state_;
};

class Sampler {
 public:
  // prompt: the tokens the repetition penalty also considers (HF applies it to the whole context).
  Sampler(const SamplingParams& params, std::span<const TokenId> prompt);

  // Picks the next token from `logits` (one row, vocab entries) and records it in the history.
  // `logits` is not modified. The generator advances exactly once per call. With a filter, only
  // allowed tokens are drawn; nullopt when it allows none.
  SampleResult sample(std::span<const float> logits);
  std::optional<SampleResult> sample(std::span<const float> logits, const TokenFilter& filter);

  const SamplingParams& params() const { return params_; }
  std::int64_t n_generated() const { return n_generated_; }

 private:
  void apply_penalties(std::vector<float>& logits) const;
  // allowed: one bit per id (null: every id).
  SampleResult draw(std::span<const float> logits, const std::uint64_t* allowed);
  // Temperature with min-p at most: the allowed tokens in id order, no sort.
  TokenId draw_unsorted(const float* x, std::size_t n, const std::uint64_t* allowed, double u);
  // Top-k or top-p: the candidates most likely first.
  TokenId draw_sorted(const float* x, std::size_t n, const std::uint64_t* allowed, double u);
  void record(TokenId id);

  SamplingParams params_;
  Rng rng_;
  std::unordered_map<TokenId, int> generated_counts_;
  std::vector<TokenId> seen_;  // prompt and generated tokens, unique, for repetition penalty
  std::unordered_map<TokenId, bool> seen_set_;
  std::int64_t n_generated_ = 0;
  // Reused between calls: no allocation per token after the first.
  std::vector<float> work_;             // the logits with biases and penalties, when there are any
  std::vector<std::uint64_t> allowed_;  // the filter as one bit per id
  std::vector<TokenId> order_;
  std::vector<float> scaled_;   // logit / temperature of the sorted draw's candidates, by id
  std::vector<float> exp_;      // their weights exp(scaled - max), by id
  std::vector<double> blocks_;  // sums of the weights, 64 at a time
};

// Log-softmax of one row, computed in double for a stable order-independent result.
void log_softmax(std::span<const float> logits, std::span<float> out);

}  // namespace recur::engine
