// The quantized Linear over the pool: activation rows are quantized once per call (per group
// size the call's weights use), then output columns are split into blocks, each computed from the
// quantized rows alone, so a row's result never depends on the batch or the thread count.
#include <algorithm>
#include <array>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "util/check.h"

namespace recur::kernels {

namespace detail {
void matmul_quant_avx512(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w,
                         float* y, std::int64_t ldy);
}  // namespace detail

namespace {

constexpr std::int64_t kColumnBlock = 64;
constexpr int kActivationSlots = 4;

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

// Rows quantized once per call for each layout its weights need: the group size, and for the
// AVX-512 4-bit kernel each 32-element block's even elements before its odd ones (the order in
// which that kernel unpacks a byte's two codes; the integer dot products do not depend on it).
QuantizedActivations quantize_rows_of(ThreadPool& pool, const float* x, std::int64_t n_rows,
                                      std::int64_t cols, int group_size, bool evens_first,
                                      int slot) {
  thread_local std::array<ActivationScratch, kActivationSlots> scratch;
  const QuantizedActivations a =
      scratch[static_cast<std::size_t>(slot)].view(n_rows, cols, group_size);
  const std::int64_t groups = cols / group_size;
  pool.run(static_cast<std::size_t>(n_rows), [&](std::size_t i) {
    const auto r = static_cast<std::int64_t>(i);
    std::int8_t* q = a.q + r * cols;
    quantize_activation_row(x + r * cols, cols, group_size,
                            {.q = q, .d = a.d + r * groups, .xsum = a.xsum + r * groups});
    if (!evens_first) return;
    std::int8_t block[32];
    for (std::int64_t b = 0; b < cols; b += 32) {
      for (int j = 0; j < 16; ++j) {
        block[j] = q[b + 2 * j];
        block[16 + j] = q[b + 2 * j + 1];
      }
      std::copy(block, block + 32, q + b);
    }
  });
  return a;
}

bool has_avx512_vnni() {
  static const bool yes = __builtin_cpu_supports("avx512vnni");
  return yes;
}

}  // namespace

void matmul_quantized(ThreadPool& pool, const float* x, std::int64_t n_rows,
                      std::span<const MatmulOut> outs) {
  RECUR_CHECK(!outs.empty() && outs.size() <= kMaxFusedMatmuls);
  const std::int64_t cols = outs[0].w.cols;
  const Isa isa = active_isa();
  const bool avx512 = (isa == Isa::kAvx512 || isa == Isa::kAmx) && has_avx512_vnni();
  // One quantization of x per (group size, layout) the call's weights need.
  struct Layout {
    int group_size = 0;
    bool evens_first = false;
    QuantizedActivations a;
  };
  std::array<Layout, kActivationSlots> layouts{};
  std::array<int, kMaxFusedMatmuls> layout_of{};
  int n_layouts = 0;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const WeightView& w = outs[i].w;
    RECUR_CHECK(w.quantized() && quant_format_supported(w.bits, w.group_size) && w.cols == cols &&
                cols % w.group_size == 0);
    const bool evens_first = avx512 && w.bits == 4;
    int k = 0;
    while (k < n_layouts && (layouts[static_cast<std::size_t>(k)].group_size != w.group_size ||
                             layouts[static_cast<std::size_t>(k)].evens_first != evens_first)) {
      ++k;
    }
    if (k == n_layouts) {
      RECUR_CHECK(n_layouts < kActivationSlots);
      layouts[static_cast<std::size_t>(k)] = {
          w.group_size, evens_first,
          quantize_rows_of(pool, x, n_rows, cols, w.group_size, evens_first, k)};
      ++n_layouts;
    }
    layout_of[i] = k;
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
    const QuantizedActivations& a = layouts[static_cast<std::size_t>(layout_of[task.out])].a;
    const WeightView w = o.w.slice_rows(task.n0, task.n1 - task.n0);
    if (avx512) {
      detail::matmul_quant_avx512(a, n_rows, w, o.y + task.n0, o.w.rows);
    } else {
      ref::matmul_quant(a, n_rows, w, o.y + task.n0, o.w.rows);
    }
  });
}

}  // namespace recur::kernels
