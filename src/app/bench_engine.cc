#include "app/bench_engine.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "util/check.h"

namespace recur::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Deterministic token ids spread over the vocabulary.
std::vector<std::int32_t> tokens(std::int64_t n, std::int64_t vocab, std::int64_t salt) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(
        (i * 7919 + salt * 104729 + 13) % std::min<std::int64_t>(vocab, 50000));
  }
  return out;
}

bool is_embedding(const std::string& name) {
  return name.find("embed_tokens") != std::string::npos ||
         name.find("embeddings") != std::string::npos;
}

}  // namespace

ModelCost model_cost(const model::Model& model) {
  double layer_elems = 0, head_elems = 0, embed_elems = 0;
  for (const auto& t : model.tensors()) {
    if (t.shape.size() != 2) continue;
    const double elems = static_cast<double>(t.shape[0]) * static_cast<double>(t.shape[1]);
    if (t.name.find("lm_head") != std::string::npos) {
      head_elems += elems;
    } else if (is_embedding(t.name)) {
      embed_elems += elems;
    } else {
      layer_elems += elems;
    }
  }
  if (head_elems == 0) head_elems = embed_elems;  // tied: the embedding is the head
  const double bytes_per_elem =
      static_cast<double>(model.weight_bytes()) /
      std::max(1.0, layer_elems + head_elems + (head_elems == embed_elems ? 0 : embed_elems));
  return {.flops_per_token = 2 * layer_elems,
          .head_flops = 2 * head_elems,
          .decode_step_bytes = (layer_elems + head_elems) * bytes_per_elem};
}

PrefillResult bench_prefill(model::Model& model, ThreadPool& pool, std::int64_t n_tokens,
                            int reps) {
  const auto ids = tokens(n_tokens, model.vocab_size(), n_tokens);
  PrefillResult best{.n_tokens = n_tokens, .seconds = 1e30};
  const ModelCost cost = model_cost(model);
  const double flops = cost.flops_per_token * static_cast<double>(n_tokens) + cost.head_flops;
  double best_cpu = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto seq = model.new_sequence();
    model::SeqChunk chunk{seq.get(), ids, model::LogitsWanted::kLast};
    auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    auto logits = model.forward(pool, std::span<const model::SeqChunk>(&chunk, 1));
    const double cpu = cpu_seconds() - c0;
    double s = seconds_since(t0);
    RECUR_CHECK_MSG(logits.is_ok(), "bench forward failed");
    best.seconds = std::min(best.seconds, s);
    best_cpu = std::min(best_cpu, cpu);
  }
  best.tokens_per_s = static_cast<double>(n_tokens) / best.seconds;
  best.flops_per_s = flops / best.seconds;
  best.cpu_flops_per_s = flops * pool.n_threads() / best_cpu;
  return best;
}

DecodeResult bench_decode(model::Model& model, ThreadPool& pool, int n_sequences, int n_steps) {
  std::vector<std::unique_ptr<model::SequenceState>> seqs;
  std::vector<std::vector<std::int32_t>> next(static_cast<std::size_t>(n_sequences));
  for (int i = 0; i < n_sequences; ++i) {
    seqs.push_back(model.new_sequence());
    auto prompt = tokens(64, model.vocab_size(), i);
    model::SeqChunk chunk{seqs.back().get(), prompt, model::LogitsWanted::kLast};
    RECUR_CHECK(model.forward(pool, std::span<const model::SeqChunk>(&chunk, 1)).is_ok());
    next[static_cast<std::size_t>(i)] = {static_cast<std::int32_t>(i + 1)};
  }
  std::vector<model::SeqChunk> batch;
  for (int i = 0; i < n_sequences; ++i) {
    batch.push_back({seqs[static_cast<std::size_t>(i)].get(), next[static_cast<std::size_t>(i)],
                     model::LogitsWanted::kLast});
  }
  // One untimed step warms the caches and the KV growth.
  RECUR_CHECK(model.forward(pool, batch).is_ok());
  auto t0 = Clock::now();
  const double c0 = cpu_seconds();
  for (int s = 0; s < n_steps; ++s) RECUR_CHECK(model.forward(pool, batch).is_ok());
  const double cpu = cpu_seconds() - c0;
  double secs = seconds_since(t0);
  return {.n_sequences = n_sequences,
          .tokens_per_s = n_sequences * n_steps / secs,
          .steps_per_s = n_steps / secs,
          .cpu_tokens_per_s = n_sequences * n_steps * pool.n_threads() / cpu};
}

}  // namespace recur::app
