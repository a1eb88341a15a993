// llama.cpp's grammar sampler timed like recur's bench/grammar/grammar_bench: the same vocabulary
// (the real Qwen3 tokenizer as a vocab-only GGUF), the same schemas (bench/grammar/schemas, through
// llama.cpp's own json_schema_to_grammar), random logits (normal, sigma 2), temperature 1. Two
// ways: the grammar applied every step ("full"), and llama-server's way: draw first, check only the
// drawn token, and apply the grammar and draw again only when it was refused ("check-first").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "json-schema-to-grammar.h"
#include "llama.h"

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 200;
  llama_backend_init();
  auto mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::printf("{\"vocab\": %d}\n", n_vocab);
  for (const char* name : {"ten_params", "tree"}) {
    std::ifstream in(std::string(RECUR_BENCH_SCHEMAS) + "/" + name + ".json");
    const std::string schema((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    auto c0 = Clock::now();
    const std::string gbnf = json_schema_to_grammar(common_json::parse(schema));
    llama_sampler* probe = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
    const double compile_ms = ms_since(c0);
    llama_sampler_free(probe);
    for (bool check_first : {false, true}) {
      for (int n_seqs : {1, 8}) {
        std::vector<llama_sampler*> grammars, dists;
        for (int i = 0; i < n_seqs; ++i) {
          grammars.push_back(llama_sampler_init_grammar(vocab, gbnf.c_str(), "root"));
          dists.push_back(llama_sampler_init_dist(100 + i));
        }
        std::mt19937 rng(100);
        std::normal_distribution<float> normal(0.0f, 2.0f);
        std::vector<float> logits(n_vocab);
        std::vector<llama_token_data> cur(n_vocab);
        std::vector<bool> done(n_seqs, false);
        std::vector<double> steps;
        for (int step = 0; step < tokens; ++step) {
          for (int i = 0; i < n_seqs; ++i) {
            if (done[i]) continue;
            for (float& l : logits) l = normal(rng);
            const auto t0 = Clock::now();
            for (int t = 0; t < n_vocab; ++t) cur[t] = {t, logits[t], 0.0f};
            llama_token_data_array arr{cur.data(), cur.size(), -1, false};
            llama_token tok;
            if (check_first) {
              llama_sampler_apply(dists[i], &arr);
              tok = arr.data[arr.selected].id;
              llama_token_data single{tok, 1.0f, 0.0f};
              llama_token_data_array one{&single, 1, -1, false};
              llama_sampler_apply(grammars[i], &one);
              if (std::isinf(single.logit)) {
                for (int t = 0; t < n_vocab; ++t) cur[t] = {t, logits[t], 0.0f};
                arr = {cur.data(), cur.size(), -1, false};
                llama_sampler_apply(grammars[i], &arr);
                llama_sampler_apply(dists[i], &arr);
                tok = arr.data[arr.selected].id;
              }
            } else {
              llama_sampler_apply(grammars[i], &arr);
              llama_sampler_apply(dists[i], &arr);
              tok = arr.data[arr.selected].id;
            }
            if (!llama_vocab_is_eog(vocab, tok)) llama_sampler_accept(grammars[i], tok);
            steps.push_back(ms_since(t0));
            if (llama_vocab_is_eog(vocab, tok)) done[i] = true;
          }
        }
        double sum = 0;
        for (double v : steps) sum += v;
        std::sort(steps.begin(), steps.end());
        std::printf(
            "{\"schema\": \"%s\", \"mode\": \"%s\", \"sequences\": %d, \"compile_ms\": %.2f, "
            "\"steps\": %zu, \"mean_ms\": %.3f, \"p99_ms\": %.2f, \"max_ms\": %.2f}\n",
            name, check_first ? "check-first" : "full", n_seqs, compile_ms, steps.size(),
            sum / steps.size(), steps[steps.size() * 99 / 100], steps.back());
        for (auto* g : grammars) llama_sampler_free(g);
        for (auto* d : dists) llama_sampler_free(d);
      }
    }
  }
  llama_model_free(model);
  return 0;
}
