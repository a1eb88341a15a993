// The quantized Linear over the pool: activation rows are quantized once per call (per group
// size the call's weights use), then output columns are split into blocks, each computed from the
// quantized rows alone, so a row's result never depends on the batch or the thread count.
#include <algorithm>
#include <array>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "util/check.h"

namespace recur::kernels {
namespace {

constexpr std::int64_t kColumnBlock = 64;

// Activation scratch of the calling (engine) thread: grows to the largest call, then is reused.
struct ActivationScratch {
  std::vector<std::int8_t> q;
  std::vector<float> d, xsum;
  QuantizedActivations view(std::int64_t n_rows, std::int64_t cols, int group_size) {
    const auto nq = static_cast<std::size_t>(n_rows * cols);
    const auto ng = static_cast<std::size_t>(n_rows * (cols / group_size));
    if (q.size() < nq) q.resize(nq);
    if (d.size() < ng) d.resize(ng), xsum.resize(ng);
    return {.q = q.data(), .d = d.data(), .xsum = xsum.data()};
  }
};

QuantizedActivations quantize_rows_of(ThreadPool& pool, const float* x, std::int64_t n_rows,
                                      std::int64_t cols, int group_size, int slot) {
  thread_local std::array<ActivationScratch, 2> scratch;
  const QuantizedActivations a =
      scratch[static_cast<std::size_t>(slot)].view(n_rows, cols, group_size);
  const std::int64_t groups = cols / group_size;
  pool.run(static_cast<std::size_t>(n_rows), [&](std::size_t i) {
    const auto r = static_cast<std::int64_t>(i);
    quantize_activation_row(
        x + r * cols, cols, group_size,
        {.q = a.q + r * cols, .d = a.d + r * groups, .xsum = a.xsum + r * groups});
  });
  return a;
}

}  // namespace

void matmul_quantized(ThreadPool& pool, const float* x, std::int64_t n_rows,
                      std::span<const MatmulOut> outs) {
  RECUR_CHECK(!outs.empty() && outs.size() <= kMaxFusedMatmuls);
  const std::int64_t cols = outs[0].w.cols;
  // At most two group sizes in one call (per-module overrides); each gets its own quantization.
  std::array<int, 2> sizes = {0, 0};
  std::array<QuantizedActivations, 2> acts{};
  for (const MatmulOut& o : outs) {
    RECUR_CHECK(o.w.quantized() && quant_format_supported(o.w.bits, o.w.group_size) &&
                o.w.cols == cols && cols % o.w.group_size == 0);
    const int gs = o.w.group_size;
    if (gs == sizes[0] || gs == sizes[1]) continue;
    const int slot = sizes[0] == 0 ? 0 : 1;
    RECUR_CHECK(sizes[static_cast<std::size_t>(slot)] == 0);
    sizes[static_cast<std::size_t>(slot)] = gs;
    acts[static_cast<std::size_t>(slot)] = quantize_rows_of(pool, x, n_rows, cols, gs, slot);
  }
  struct Task {
    std::size_t out;
    std::int64_t n0, n1;
  };
  // The caller's list, named by reference: inside the tasks a thread_local would be the worker's.
  thread_local std::vector<Task> task_list;
  std::vector<Task>& tasks = task_list;
  tasks.clear();
  for (std::size_t i = 0; i < outs.size(); ++i) {
    for (std::int64_t n0 = 0; n0 < outs[i].w.rows; n0 += kColumnBlock) {
      tasks.push_back({i, n0, std::min(outs[i].w.rows, n0 + kColumnBlock)});
    }
  }
  pool.run(tasks.size(), [&](std::size_t t) {
    const Task& task = tasks[t];
    const MatmulOut& o = outs[task.out];
    const QuantizedActivations& a = acts[o.w.group_size == sizes[0] ? 0 : 1];
    ref::matmul_quant(a, n_rows, o.w.slice_rows(task.n0, task.n1 - task.n0), o.y + task.n0,
                      o.w.rows);
  });
}

}  // namespace recur::kernels
