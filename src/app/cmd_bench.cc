// recur bench: this machine's ceilings (bf16 compute peak, read bandwidth), then - with -m - the
// model's prefill and decode throughput as fractions of them, all in one run.
#include <fmt/format.h>

#include "app/bench_engine.h"
#include "app/commands.h"
#include "app/runtime.h"
#include "kernels/bench.h"
#include "util/log.h"

namespace recur::app {

int cmd_bench(const config::Options& opts) {
  const double probe_s = opts.get_float("bench-seconds");
  if (opts.get_string("model").empty()) {
    ThreadPool pool(opts.get_int("threads") > 0 ? static_cast<int>(opts.get_int("threads"))
                                                : available_cores());
    kernels::Ceilings c = kernels::measure_ceilings(pool, probe_s);
    fmt::print(
        "threads {}: bf16 peak {:.1f} GFLOP/s (avx512 {:.1f}, amx {:.1f}), read bandwidth "
        "{:.1f} GB/s\n(pass -m DIR for prefill and decode figures; bench/kernels has the "
        "matmul shapes)\n",
        c.n_threads, c.peak_flops() / 1e9, c.avx512_bf16_flops / 1e9, c.amx_bf16_flops / 1e9,
        c.read_bytes_per_s / 1e9);
    return kExitOk;
  }
  auto rt = load_runtime(opts, 2048, 4);
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
  fmt::print("\n| phase | tokens | tokens/s | GFLOP/s | of peak |\n|---|---|---|---|---|\n");
  for (std::int64_t n : {128, 512, 2048}) {
    PrefillResult p = bench_prefill(*rt->model, *rt->pool, n, 2);
    fmt::print("| prefill | {} | {:.1f} | {:.1f} | {:.0f}% |\n", n, p.tokens_per_s,
               p.flops_per_s / 1e9, 100 * p.flops_per_s / peak);
  }
  fmt::print(
      "\n| phase | sequences | tokens/s | bandwidth bound tokens/s | of bound |\n"
      "|---|---|---|---|---|\n");
  for (int n : {1, 4}) {
    DecodeResult d = bench_decode(*rt->model, *rt->pool, n, 32);
    // One step reads the weights once for all sequences together.
    const double bound = n * bw / cost.decode_step_bytes;
    fmt::print("| decode | {} | {:.1f} | {:.1f} | {:.0f}% |\n", n, d.tokens_per_s, bound,
               100 * d.tokens_per_s / bound);
  }
  return kExitOk;
}

}  // namespace recur::app
