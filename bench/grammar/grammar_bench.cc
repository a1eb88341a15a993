// Constrained decoding's own cost per generated token: the token mask of the grammar's state, the
// sampler drawing from the allowed tokens and the step over the chosen token's bytes, on a real
// vocabulary (a checkpoint directory's tokenizer: the qwen3.5-0.8b preset has Qwen3.5's 248k
// tokens). Random logits walk the grammar as a model with random weights would. Reported cold
// (the first request of a schema: every state's mask computed on first sight) and warm (a later
// request of the same schema: masks reused), for 1 and 8 sequences stepping in turn, next to the
// unconstrained sampler's time; plus the schema's compile time.
// Usage: grammar_bench MODEL_DIR [TOKENS_PER_SEQUENCE]   -> JSON lines on stdout
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/sampler.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "kernels/isa.h"
#include "tokenizer/tokenizer.h"
#include "util/mmap_file.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Timing {
  std::vector<double> step_ms;
  double mean() const {
    double s = 0;
    for (double v : step_ms) s += v;
    return step_ms.empty() ? 0 : s / static_cast<double>(step_ms.size());
  }
  double pct(double p) {
    if (step_ms.empty()) return 0;
    std::sort(step_ms.begin(), step_ms.end());
    return step_ms[std::min(step_ms.size() - 1,
                            static_cast<std::size_t>(p * static_cast<double>(step_ms.size())))];
  }
};

// n sequences stepping in turn under one grammar: per step, mask + draw + accept.
Timing run(const std::shared_ptr<recur::grammar::TokenGrammar>& tg, int n_seqs, int tokens,
           std::uint64_t seed0, std::size_t vocab,
           const std::vector<recur::engine::TokenId>& stops) {
  std::vector<recur::grammar::Matcher> matchers;
  std::vector<recur::engine::Sampler> samplers;
  for (int i = 0; i < n_seqs; ++i) {
    matchers.emplace_back(tg);
    samplers.emplace_back(
        recur::engine::SamplingParams{.temperature = 1.0f,
                                      .seed = seed0 + static_cast<std::uint64_t>(i)},
        std::span<const recur::engine::TokenId>());
  }
  std::mt19937 rng(static_cast<unsigned>(seed0));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(vocab);
  std::vector<bool> done(static_cast<std::size_t>(n_seqs), false);
  Timing t;
  for (int step = 0; step < tokens; ++step) {
    for (int i = 0; i < n_seqs; ++i) {
      if (done[static_cast<std::size_t>(i)]) continue;
      for (float& l : logits) l = normal(rng);
      auto& m = matchers[static_cast<std::size_t>(i)];
      const auto t0 = Clock::now();
      const auto mask = m.allowed();
      recur::engine::TokenFilter f{.bits = *mask, .stop_ids = stops, .allow_stop = m.is_complete()};
      auto r = samplers[static_cast<std::size_t>(i)].sample(logits, f);
      bool end = !r || std::find(stops.begin(), stops.end(), r->id) != stops.end();
      if (!end) m.accept(r->id);
      t.step_ms.push_back(ms_since(t0));
      if (end || (m.is_complete() && !m.can_continue())) done[static_cast<std::size_t>(i)] = true;
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: grammar_bench MODEL_DIR [TOKENS_PER_SEQUENCE]  (env RECUR_ISA: the "
                 "sampler's ISA, as --isa)\n");
    return 2;
  }
  if (const char* isa = std::getenv("RECUR_ISA")) {
    auto parsed = recur::kernels::parse_isa(isa);
    if (!parsed.is_ok() || !recur::kernels::select_isa(*parsed).is_ok()) {
      std::fprintf(stderr, "RECUR_ISA=%s: not an ISA this CPU runs\n", isa);
      return 2;
    }
  }
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 200;
  auto tok = recur::tokenizer::Tokenizer::load_dir(argv[1]);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto t0 = Clock::now();
  auto vocab = std::make_shared<const recur::grammar::Vocabulary>(tok->token_byte_table());
  std::printf("{\"vocab\": %zu, \"trie_nodes\": %zu, \"vocabulary_ms\": %.1f}\n", vocab->size(),
              vocab->trie().byte.size(), ms_since(t0));
  std::vector<recur::engine::TokenId> stops;
  if (auto eos = tok->eos_id()) stops.push_back(*eos);

  // The sampler alone, for scale.
  {
    std::vector<float> logits(vocab->size());
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    recur::engine::Sampler s({.temperature = 1.0f, .seed = 1}, {});
    Timing t;
    for (int i = 0; i < 200; ++i) {
      for (float& l : logits) l = normal(rng);
      auto s0 = Clock::now();
      (void)s.sample(logits);
      t.step_ms.push_back(ms_since(s0));
    }
    std::printf("{\"unconstrained_sample_ms\": %.3f}\n", t.mean());
  }

  for (const char* name : {"ten_params", "tree"}) {
    // The schemas llama_grammar_bench (bench/grammar/llama) reads too: a 10-parameter function
    // and a recursive tree.
    auto text = recur::read_file(std::string(RECUR_BENCH_SCHEMAS) + "/" + name + ".json");
    if (!text.is_ok()) {
      std::fprintf(stderr, "%s\n", text.status().to_string().c_str());
      return 1;
    }
    const std::string schema = *text;
    Timing compile;
    std::shared_ptr<const recur::grammar::Grammar> grammar;
    for (int i = 0; i < 20; ++i) {
      auto c0 = Clock::now();
      auto out = recur::grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
      auto g = recur::grammar::parse_gbnf(out->gbnf);
      recur::grammar::TokenGrammar tg(*g, vocab);
      compile.step_ms.push_back(ms_since(c0));
      grammar = *g;
    }
    for (int n_seqs : {1, 8}) {
      auto tg = std::make_shared<recur::grammar::TokenGrammar>(grammar, vocab);
      Timing cold = run(tg, n_seqs, tokens, 100, vocab->size(), stops);
      const auto masks_cold = tg->masks_computed();
      Timing warm = run(tg, n_seqs, tokens, 200, vocab->size(), stops);
      std::printf(
          "{\"schema\": \"%s\", \"sequences\": %d, \"compile_ms\": %.2f, \"steps\": %zu, "
          "\"cold_mean_ms\": %.3f, \"cold_p99_ms\": %.2f, \"cold_max_ms\": %.2f, \"masks_cold\": "
          "%llu, "
          "\"warm_mean_ms\": %.3f, \"warm_p99_ms\": %.2f, \"masks_warm\": %llu, \"states\": %zu, "
          "\"memory_mb\": %.1f}\n",
          name, n_seqs, compile.pct(0.5), cold.step_ms.size(), cold.mean(), cold.pct(0.99),
          cold.pct(1.0), static_cast<unsigned long long>(masks_cold), warm.mean(), warm.pct(0.99),
          static_cast<unsigned long long>(tg->masks_computed() - masks_cold),
          tg->automaton().n_states(), static_cast<double>(tg->memory_bytes()) / 1e6);
    }
  }
  return 0;
}
