// Greedy decoding with llama.cpp from prompt token ids, for verify.py: prints one JSON line per
// generated token: its id and the TOP_K most likely ids with their log-probabilities.
// Usage: llama_greedy MODEL.gguf N_GEN THREADS TOP_K ID,ID,...
// Build (nothing else of llama.cpp is built): see verify.sh.
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N_GEN THREADS TOP_K ID,ID,...\n", argv[0]);
    return 2;
  }
  const int n_gen = std::atoi(argv[2]);
  const int threads = std::atoi(argv[3]);
  std::vector<llama_token> prompt;
  const int top_k = std::atoi(argv[4]);
  std::stringstream ss(argv[5]);
  for (std::string t; std::getline(ss, t, ',');) prompt.push_back(std::atoi(t.c_str()));

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(prompt.size() + n_gen + 16);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(prompt.size());
  cp.n_threads = cp.n_threads_batch = threads;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  std::vector<llama_token> cur = prompt;
  std::vector<int> order(n_vocab);
  for (int step = 0; step < n_gen; ++step) {
    if (llama_decode(ctx, llama_batch_get_one(cur.data(), static_cast<int32_t>(cur.size()))) != 0) {
      std::fprintf(stderr, "llama_decode failed\n");
      return 1;
    }
    const float* logits = llama_get_logits_ith(ctx, -1);
    const float mx = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
    const double lse = mx + std::log(sum);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    std::printf("{\"id\": %d, \"top\": [", order[0]);
    for (int k = 0; k < top_k; ++k) {
      std::printf("%s[%d, %.6f]", k ? ", " : "", order[k], logits[order[k]] - lse);
    }
    std::printf("]}\n");
    cur.assign(1, order[0]);
  }
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
