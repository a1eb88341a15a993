// recur bench: this machine's ceilings (bf16 compute peak, read bandwidth), then - with -m - the
// model's prefill and decode throughput as fractions of them, all in one run.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "app/bench_engine.h"
#include "app/commands.h"
#include "app/runtime.h"
#include "kernels/bench.h"
#include "util/log.h"

namespace recur::app {

namespace {

// "128,512,2048" -> {128, 512, 2048}; each a positive integer up to 1 << 20.
Result<std::vector<std::int64_t>> parse_counts(const std::string& text, const char* flag) {
  std::vector<std::int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v <= 0 ||
        v > (1 << 20)) {
      return Error(StatusCode::kInvalidArgument,
                   "{} '{}': item '{}' is not a positive integer up to 1048576", flag, text, item);
    }
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

}  // namespace

int cmd_bench(const config::Options& opts) {
  const double probe_s = opts.get_float("bench-seconds");
  if (opts.get_string("model").empty()) {
    ThreadPool pool(
        opts.get_int("threads") > 0 ? static_cast<int>(opts.get_int("threads")) : available_cores(),
        std::chrono::microseconds(opts.get_int("thread-spin")));
    kernels::Ceilings c = kernels::measure_ceilings(pool, probe_s);
    fmt::print(
        "threads {}: bf16 peak {:.1f} GFLOP/s (avx512 {:.1f}, amx {:.1f}), read bandwidth "
        "{:.1f} GB/s\n(pass -m DIR for prefill and decode figures; bench/kernels has the "
        "matmul shapes)\n",
        c.n_threads, c.peak_flops() / 1e9, c.avx512_bf16_flops / 1e9, c.amx_bf16_flops / 1e9,
        c.read_bytes_per_s / 1e9);
    return kExitOk;
  }
  auto prompts = parse_counts(opts.get_string("bench-prompts"), "--bench-prompts");
  auto sequences = parse_counts(opts.get_string("bench-sequences"), "--bench-sequences");
  if (!prompts || !sequences) {
    log::error("recur bench: {}", (!prompts ? prompts.status() : sequences.status()).message());
    return kExitFailure;
  }
  const std::int64_t max_seqs = *std::max_element(sequences->begin(), sequences->end());
  auto rt = load_runtime(
      opts,
      std::max<std::int64_t>(*std::max_element(prompts->begin(), prompts->end()), 64 * max_seqs),
      max_seqs);
  if (!rt) {
    log::error("recur bench: {}", rt.status().message());
    return kExitFailure;
  }
  kernels::Ceilings c = kernels::measure_ceilings(*rt->pool, probe_s);
  const double peak = c.peak_flops();
  const double bw = c.read_bytes_per_s;
  const ModelCost cost = model_cost(*rt->model);
  fmt::print("model {} ({}), threads {}\n", opts.get_string("model"), rt->model->family(),
             rt->n_threads);
  fmt::print("ceilings: bf16 peak {:.1f} GFLOP/s, read bandwidth {:.1f} GB/s\n", peak / 1e9,
             bw / 1e9);
  fmt::print("cost: {:.2f} GFLOP per prompt token, {:.1f} MB of weights per decode step\n",
             cost.flops_per_token / 1e9, cost.decode_step_bytes / 1e6);
  fmt::print(
      "undisturbed estimates from process CPU time: peak {:.1f} GFLOP/s, bandwidth {:.1f} GB/s\n",
      c.peak_cpu_flops / 1e9, c.read_cpu_bytes_per_s / 1e9);
  fmt::print(
      "\n| phase | tokens | tokens/s | GFLOP/s | of peak | CPU-time estimate: of CPU-time peak |\n"
      "|---|---|---|---|---|---|\n");
  for (std::int64_t n : *prompts) {
    PrefillResult p = bench_prefill(*rt->model, *rt->pool, n, 2);
    fmt::print("| prefill | {} | {:.1f} | {:.1f} | {:.0f}% | {:.0f}% |\n", n, p.tokens_per_s,
               p.flops_per_s / 1e9, 100 * p.flops_per_s / peak,
               100 * p.cpu_flops_per_s / c.peak_cpu_flops);
  }
  fmt::print(
      "\n| phase | sequences | tokens/s | bandwidth bound tokens/s | of bound | CPU-time "
      "estimate: of CPU-time bound |\n|---|---|---|---|---|---|\n");
  for (std::int64_t n : *sequences) {
    DecodeResult d = bench_decode(*rt->model, *rt->pool, static_cast<int>(n), 32);
    // One step reads the weights once for all sequences together.
    const double bound = static_cast<double>(n) * bw / cost.decode_step_bytes;
    const double cpu_bound =
        static_cast<double>(n) * c.read_cpu_bytes_per_s / cost.decode_step_bytes;
    fmt::print("| decode | {} | {:.1f} | {:.1f} | {:.0f}% | {:.0f}% |\n", n, d.tokens_per_s, bound,
               100 * d.tokens_per_s / bound, 100 * d.cpu_tokens_per_s / cpu_bound);
  }
  return kExitOk;
}

}  // namespace recur::app
