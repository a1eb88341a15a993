// Tokenizer throughput: load time of a tokenizer directory and single-threaded encode MB/s over
// a JSON array of documents (bench.mjs writes it and times the HF oracle on the same documents).
// Usage: tokenizer_bench TOKENIZER_DIR DOCS.json [REPEATS]   -> one JSON line on stdout
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "util/mmap_file.h"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER_DIR DOCS.json [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  auto t0 = std::chrono::steady_clock::now();
  auto tok = recur::tokenizer::Tokenizer::load_dir(argv[1]);
  double load_s = seconds_since(t0);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto text = recur::read_file(argv[2]);
  if (!text.is_ok()) return 1;
  auto docs_json = nlohmann::json::parse(*text, nullptr, false);
  if (docs_json.is_discarded() || !docs_json.is_array()) return 1;
  std::vector<std::string> docs;
  std::size_t n_bytes = 0;
  for (const auto& d : docs_json) {
    docs.push_back(d.get<std::string>());
    n_bytes += docs.back().size();
  }
  double best_s = 1e30;
  std::size_t n_tokens = 0;
  std::vector<recur::tokenizer::TokenId> ids;
  for (int r = 0; r < repeats; ++r) {
    auto t1 = std::chrono::steady_clock::now();
    n_tokens = 0;
    for (const std::string& d : docs) {
      ids.clear();
      tok->encode_into(d, {}, ids);
      n_tokens += ids.size();
    }
    best_s = std::min(best_s, seconds_since(t1));
  }
  std::printf(
      "{\"load_s\": %.4f, \"bytes\": %zu, \"tokens\": %zu, \"encode_s\": %.4f, \"mb_per_s\": "
      "%.2f}\n",
      load_s, n_bytes, n_tokens, best_s, n_bytes / best_s / 1e6);
  return 0;
}
