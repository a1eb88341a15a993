#include "app/bench_engine.h"

#include <algorithm>
#include <chrono>

#include "model/moe.h"
#include "util/check.h"

namespace recur::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
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

bool is_expert(const std::string& name) {
  return name.find(".experts.") != std::string::npos ||
         name.find(".switch_mlp.") != std::string::npos;
}

bool is_embedding(const std::string& name) {
  return name.find("embed_tokens") != std::string::npos ||
         name.find("embeddings") != std::string::npos;
}

}  // namespace

// From the tensors the model reads, not the checkpoint's size: a tied checkpoint may still carry
// an lm_head that is never loaded (real Qwen3-0.6B does; counting it overstated the bytes of a
// decode step by 26%).
ModelCost model_cost(const model::Model& model) {
  double layer_elems = 0, head_elems = 0, embed_elems = 0;
  double layer_bytes = 0, head_bytes = 0, embed_bytes = 0, expert_bytes = 0;
  for (const auto& t : model.tensors()) {
    if (t.u8) {  // MXFP4 experts' blocks (their packed bytes) and scales (0: in the blocks')
      expert_bytes += static_cast<double>(t.n_bytes);
      continue;
    }
    if (t.shape.size() != 2 || t.n_bytes == 0) continue;
    // A quantized weight's scales and biases are bytes read, not products computed.
    const bool group_params = t.name.ends_with(".scales") || t.name.ends_with(".biases");
    const double elems =
        group_params ? 0.0 : static_cast<double>(t.shape[0]) * static_cast<double>(t.shape[1]);
    const auto bytes = static_cast<double>(t.n_bytes);
    if (is_expert(t.name)) {
      expert_bytes += bytes;
    } else if (t.name.find("lm_head") != std::string::npos) {
      head_elems += elems;
      head_bytes += bytes;
    } else if (is_embedding(t.name)) {
      embed_elems += elems;
      embed_bytes += bytes;
    } else {
      layer_elems += elems;
      layer_bytes += bytes;
    }
  }
  if (head_elems == 0) {  // tied: the embedding is the head
    head_elems = embed_elems;
    head_bytes = embed_bytes;
  }
  double per_key = 0;
  std::vector<std::pair<double, std::int64_t>> windowed;
  for (const model::LayerStateSpec& l : model.state_layout().layers) {
    if (l.kind == model::LayerStateSpec::Kind::kAttention) {
      const double flops = 4.0 * static_cast<double>(l.n_heads * l.head_dim);
      per_key += flops;
      if (l.ring()) windowed.emplace_back(flops, l.window);
    }
  }
  return {.flops_per_token = 2 * layer_elems,
          .head_flops = 2 * head_elems,
          .decode_step_bytes = layer_bytes + head_bytes,
          .expert_bytes = expert_bytes,
          .attention_flops_per_key = per_key,
          .windowed = std::move(windowed)};
}

double ModelCost::attention_flops(std::int64_t n, std::int64_t prefix) const {
  const auto nd = static_cast<double>(n);
  double full = attention_flops_per_key;
  double windowed_flops = 0;
  for (const auto& [flops, window] : windowed) {
    full -= flops;
    double keys = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      keys += static_cast<double>(std::min(prefix + i + 1, window));
    }
    windowed_flops += flops * keys;
  }
  return full * (nd * static_cast<double>(prefix) + nd * (nd + 1) / 2) + windowed_flops;
}

namespace {

// Forwards ids into seq in chunks of at most chunk_tokens (logits of the last chunk only).
void prefill_chunked(model::Model& model, ThreadPool& pool, model::SequenceState& seq,
                     std::span<const std::int32_t> ids, std::int64_t chunk_tokens) {
  for (std::size_t at = 0; at < ids.size(); at += static_cast<std::size_t>(chunk_tokens)) {
    const auto part =
        ids.subspan(at).first(std::min(static_cast<std::size_t>(chunk_tokens), ids.size() - at));
    model::SeqChunk chunk{&seq, part, model::LogitsWanted::kLast};
    RECUR_CHECK_MSG(model.forward(pool, std::span<const model::SeqChunk>(&chunk, 1)).is_ok(),
                    "bench forward failed");
  }
}

}  // namespace

PrefillResult bench_prefill(model::Model& model, ThreadPool& pool, std::int64_t n_tokens,
                            std::int64_t prefix_tokens, std::int64_t chunk_tokens, int reps) {
  const auto prefix = tokens(prefix_tokens, model.vocab_size(), (1 << 21) + prefix_tokens);
  const auto ids = tokens(n_tokens, model.vocab_size(), n_tokens);
  PrefillResult best{.n_tokens = n_tokens, .prefix_tokens = prefix_tokens, .seconds = 1e30};
  const ModelCost cost = model_cost(model);
  const double flops = cost.flops_per_token * static_cast<double>(n_tokens) + cost.head_flops;
  auto seq = model.new_sequence();
  prefill_chunked(model, pool, *seq, prefix, chunk_tokens);
  const std::shared_ptr<const model::Snapshot> conversation = seq->snapshot();
  model::ExpertTraffic& experts = model::expert_traffic();
  experts.enabled = true;
  for (int r = 0; r < reps; ++r) {
    RECUR_CHECK(seq->restore(*conversation).is_ok());
    experts.reset();  // every rep routes the same tokens alike
    model::SeqChunk chunk{seq.get(), ids, model::LogitsWanted::kLast};
    stages::reset();
    auto t0 = Clock::now();
    auto logits = model.forward(pool, std::span<const model::SeqChunk>(&chunk, 1));
    double s = seconds_since(t0);
    RECUR_CHECK_MSG(logits.is_ok(), "bench forward failed");
    if (s < best.seconds && stages::enabled()) best.stages = stages::table();
    best.seconds = std::min(best.seconds, s);
  }
  experts.enabled = false;
  best.tokens_per_s = static_cast<double>(n_tokens) / best.seconds;
  best.flops_per_s = (flops + experts.flops) / best.seconds;
  best.flops_with_attention_per_s =
      (flops + experts.flops + cost.attention_flops(n_tokens, prefix_tokens)) / best.seconds;
  return best;
}

DecodeBench::DecodeBench(model::Model& model, ThreadPool& pool, int n_sequences,
                         std::int64_t context_tokens, std::int64_t chunk_tokens)
    : model_(model), pool_(pool), next_(static_cast<std::size_t>(n_sequences)) {
  for (int i = 0; i < n_sequences; ++i) {
    seqs_.push_back(model.new_sequence());
    prefill_chunked(model, pool, *seqs_.back(), tokens(context_tokens, model.vocab_size(), i),
                    chunk_tokens);
    next_[static_cast<std::size_t>(i)] = {static_cast<std::int32_t>(i + 1)};
  }
  for (int i = 0; i < n_sequences; ++i) {
    batch_.push_back({seqs_[static_cast<std::size_t>(i)].get(), next_[static_cast<std::size_t>(i)],
                      model::LogitsWanted::kLast});
  }
  step();  // untimed by the caller: warms the caches and the KV growth
}

double DecodeBench::step() {
  model::ExpertTraffic& experts = model::expert_traffic();
  experts.reset();
  experts.enabled = true;
  const auto t0 = Clock::now();
  RECUR_CHECK(model_.forward(pool_, batch_).is_ok());
  const double s = seconds_since(t0);
  experts.enabled = false;
  expert_bytes_ = static_cast<double>(experts.expert_bytes);
  return s;
}

double DecodeBench::state_bytes_per_step() const {
  const std::int64_t n_kv = seqs_.front()->n_tokens();
  // Recurrent and conv states are read and written back; the KV cache is read once (a ring:
  // its window).
  double bytes = 0;
  for (const model::LayerStateSpec& l : model_.state_layout().layers) {
    bytes += l.kind == model::LayerStateSpec::Kind::kRecurrent
                 ? 2.0 * static_cast<double>(l.snapshot_bytes(n_kv))
                 : static_cast<double>(l.kept_tokens(n_kv) * l.kv_bytes_per_token());
  }
  return static_cast<double>(seqs_.size()) * bytes;
}

}  // namespace recur::app
