// The public kernels (kernels.h): shape checks, the split of attention and the recurrences over
// the pool, and a call through the active ISA's KernelTable (kernel_table.h) for every kernel
// that differs per ISA; the rest run the scalar reference on every ISA.
#include "kernels/kernels.h"

#include <algorithm>
#include <array>

#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "kernels/reference.h"
#include "util/check.h"

namespace recur::kernels {

using detail::active_kernels;

void matmul(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w, float* y) {
  const MatmulOut out{.w = w, .y = y};
  matmul_fused(pool, x, n_rows, std::span<const MatmulOut>(&out, 1));
}

void matmul_fused(ThreadPool& pool, const float* x, std::int64_t n_rows,
                  std::span<const MatmulOut> outs) {
  RECUR_CHECK(n_rows >= 0 && !outs.empty() && outs.size() <= kMaxFusedMatmuls);
  for (const MatmulOut& o : outs) {
    RECUR_CHECK(o.w.rows >= 0 && o.w.cols == outs[0].w.cols && o.w.cols >= 0);
  }
  if (n_rows == 0) return;
  const MatmulGroup group{.x = x, .n_rows = n_rows, .outs = outs};
  detail::matmul_dispatch(pool, std::span<const MatmulGroup>(&group, 1));
}

void embedding_rows(const WeightView& table, const std::int32_t* ids, std::int64_t n_ids,
                    float* out) {
  if (!table.quantized()) return ref::embedding_rows(table, ids, n_ids, out);
  for (std::int64_t i = 0; i < n_ids; ++i) {
    RECUR_CHECK(ids[i] >= 0 && ids[i] < table.rows);
    dequantize_row(table, ids[i], out + i * table.cols);
  }
}

void embedding_rows(ThreadPool& pool, const WeightView& table, const std::int32_t* ids,
                    std::int64_t n_ids, float* out) {
  pool.run_blocks(n_ids, 16, [&](std::int64_t i0, std::int64_t i1) {
    embedding_rows(table, ids + i0, i1 - i0, out + i0 * table.cols);
  });
}

void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps) {
  active_kernels().rms_norm(x, w, y, shape, eps);
}

void rms_norm_gated(const float* x, const float* z, const float* w, float* y,
                    const RowsShape& shape, float eps) {
  active_kernels().rms_norm_gated(x, z, w, y, shape, eps);
}

void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, std::int64_t group_size, float eps) {
  RECUR_CHECK(group_size > 0 && shape.width % group_size == 0);
  if (group_size > detail::kMaxGateGroup) {
    return ref::rms_norm_gate_first(x, z, w, y, shape, group_size, eps);
  }
  active_kernels().rms_norm_gate_first(x, z, w, y, shape, group_size, eps);
}

void l2_norm(float* x, const RowsShape& shape, float eps, float scale) {
  active_kernels().l2_norm(x, shape, eps, scale);
}

void rope(float* x, const std::int32_t* positions, const RopeShape& shape, float theta) {
  ref::rope(x, positions, shape, theta);
}

namespace {

void check_attention(const AttentionShape& shape) {
  RECUR_CHECK(shape.pos0 + shape.n_q <= shape.n_kv);
  RECUR_CHECK(shape.n_kv_heads > 0 && shape.n_heads % shape.n_kv_heads == 0);
  RECUR_CHECK(shape.head_dim > 0 && shape.head_dim <= kMaxHeadDim);
  RECUR_CHECK(shape.kv_dtype == DType::kF32 || shape.kv_dtype == DType::kBF16);
}

// Tables without a tile kernel (scalar) and groups wider than a tile run one task per (query,
// head); the others one per tile of queries x the heads of one kv head, so K/V rows are read once
// per tile.
bool tiled(const AttentionShape& shape, const detail::KernelTable& t) {
  return t.attention_tile != nullptr &&
         shape.n_heads / shape.n_kv_heads <= detail::kAttentionTileRows;
}
std::int64_t tile_queries(const AttentionShape& shape) {
  return detail::kAttentionTileRows / (shape.n_heads / shape.n_kv_heads);
}
// Every job's tasks in one dispatch (a batched step: one job per sequence). Jobs are few, so
// each task finds its job by a linear walk. tasks(job) counts a job's tasks, run(job, t) runs one.
template <typename Job, typename Tasks, typename Run>
void run_jobs(ThreadPool& pool, std::span<const Job> jobs, const Tasks& tasks, const Run& run) {
  std::int64_t n_tasks = 0;
  for (const Job& j : jobs) n_tasks += tasks(j);
  pool.run(static_cast<std::size_t>(n_tasks), [&](std::size_t task) {
    auto t = static_cast<std::int64_t>(task);
    for (const Job& j : jobs) {
      const std::int64_t n = tasks(j);
      if (t < n) return run(j, t);
      t -= n;
    }
  });
}

// run_jobs with each pool task a run of consecutive tasks, about two runs per thread, so that a
// thread's tasks are neighbours: the gated delta rule's tasks write 256-512-byte pieces of each
// token's output row and read state rows beside their neighbours', and when the two threads
// took alternate tasks a Qwen3-Next prefill's recurrence ran 1.4x slower than in two runs of
// heads (Zen 5 VM: 9.0-9.6 -> 6.5-6.8 ms a layer at 512 tokens; runs of 2, 4 and 8 tasks gained
// less the shorter they were).
template <typename Job, typename Tasks, typename Run>
void run_jobs_in_runs(ThreadPool& pool, std::span<const Job> jobs, const Tasks& tasks,
                      const Run& run) {
  std::int64_t n_tasks = 0;
  for (const Job& j : jobs) n_tasks += tasks(j);
  const std::int64_t per_run =
      std::max<std::int64_t>(1, (n_tasks + 2 * pool.n_threads() - 1) / (2 * pool.n_threads()));
  pool.run_blocks(n_tasks, per_run, [&](std::int64_t begin, std::int64_t end) {
    std::size_t ji = 0;
    std::int64_t first = 0;  // the task number of jobs[ji]'s first task
    for (std::int64_t task = begin; task < end; ++task) {
      while (task - first >= tasks(jobs[ji])) first += tasks(jobs[ji++]);
      run(jobs[ji], task - first);
    }
  });
}

std::int64_t attention_tasks(const AttentionShape& shape, const detail::KernelTable& t) {
  if (!tiled(shape, t)) return shape.n_q * shape.n_heads;
  return (shape.n_q + tile_queries(shape) - 1) / tile_queries(shape) * shape.n_kv_heads;
}

// Task t of one job. The last queries see the most keys: their tiles go first so the pool's
// tail is short tasks.
void attention_task(const AttentionJob& j, std::int64_t t, const detail::KernelTable& table) {
  const AttentionShape& shape = j.shape;
  if (!tiled(shape, table)) {
    table.attention_query(j.q, j.k_cache, j.v_cache, j.out, shape, t / shape.n_heads,
                          t % shape.n_heads);
    return;
  }
  const std::int64_t tile_q = tile_queries(shape);
  const std::int64_t n_tiles = (shape.n_q + tile_q - 1) / tile_q;
  const std::int64_t tile = n_tiles - 1 - t / shape.n_kv_heads;
  const std::int64_t kvh = t % shape.n_kv_heads;
  const std::int64_t i0 = tile * tile_q;
  const std::int64_t n_i = std::min(tile_q, shape.n_q - i0);
  table.attention_tile(j.q, j.k_cache, j.v_cache, j.out, shape, i0, n_i, kvh);
}

}  // namespace

void attention(ThreadPool& pool, const float* q, const void* k_cache, const void* v_cache,
               float* out, const AttentionShape& shape) {
  const AttentionJob job{
      .q = q, .k_cache = k_cache, .v_cache = v_cache, .out = out, .shape = shape};
  attention_batch(pool, std::span(&job, 1));
}

void attention_batch(ThreadPool& pool, std::span<const AttentionJob> jobs) {
  const detail::KernelTable& table = active_kernels();
  for (const AttentionJob& j : jobs) check_attention(j.shape);
  run_jobs(
      pool, jobs, [&](const AttentionJob& j) { return attention_tasks(j.shape, table); },
      [&](const AttentionJob& j, std::int64_t t) { attention_task(j, t, table); });
}

void silu(float* x, std::int64_t n) { active_kernels().silu(x, n); }

float sample_max(const float* logits, std::int64_t n, const std::uint64_t* allowed) {
  return active_kernels().sample_max(logits, n, allowed);
}
void sample_block_sums(const SampleRow& row, double* blocks) {
  active_kernels().sample_block_sums(row, blocks);
}
void swiglu(const float* gate, const float* up, float* out, std::int64_t n) {
  active_kernels().swiglu(gate, up, out, n);
}
void geglu(const float* gate, const float* up, float* out, std::int64_t n) {
  active_kernels().geglu(gate, up, out, n);
}
void sigmoid(float* x, std::int64_t n) { active_kernels().sigmoid(x, n); }
void softplus(float* x, std::int64_t n) { ref::softplus(x, n); }
void mul_sigmoid(float* x, const float* gate, std::int64_t n) {
  active_kernels().mul_sigmoid(x, gate, n);
}
void add(float* y, const float* x, std::int64_t n) { active_kernels().add(y, x, n); }
void add_scaled(float* y, const float* x, float s, std::int64_t n) {
  active_kernels().add_scaled(y, x, s, n);
}
void softmax(float* x, std::int64_t n) { ref::softmax(x, n); }

void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                   const Conv1dShape& shape) {
  RECUR_CHECK(shape.kernel >= 1 && shape.kernel <= 16);
  active_kernels().causal_conv1d(x, w, bias, state, y, shape);
}

namespace {

// A chunk of several tokens walks the state by column blocks (vec_recurrence.h); one token, a
// table without the column form (scalar) or a k_dim past its block buffer keep the per-head
// loop. Same bytes either way.
bool gated_delta_per_head(const GatedDeltaShape& s, const detail::KernelTable& t) {
  return s.n_tokens < 2 || t.gated_delta_cols == nullptr || s.k_dim > kMaxHeadDim;
}
std::int64_t gated_delta_blocks(const GatedDeltaShape& s) {
  return (s.v_dim + detail::kGatedDeltaCols - 1) / detail::kGatedDeltaCols;
}
std::int64_t gated_delta_tasks(const GatedDeltaShape& s, const detail::KernelTable& t) {
  return gated_delta_per_head(s, t) ? s.n_v_heads : s.n_v_heads * gated_delta_blocks(s);
}
void gated_delta_task(const GatedDeltaJob& job, std::int64_t t, const detail::KernelTable& table) {
  const GatedDeltaShape& s = job.shape;
  const std::int64_t state_floats = s.k_dim * s.v_dim;
  if (gated_delta_per_head(s, table)) {
    return table.gated_delta_head(job.in, job.state + t * state_floats, job.out, s, t);
  }
  const std::int64_t n_blocks = gated_delta_blocks(s);
  const std::int64_t j = t / n_blocks, b0 = t % n_blocks * detail::kGatedDeltaCols;
  table.gated_delta_cols(job.in, job.state + j * state_floats, job.out, s, j, b0);
}

}  // namespace

void gated_delta_rule(ThreadPool& pool, const GatedDeltaInputs& in, float* state, float* out,
                      const GatedDeltaShape& shape) {
  const GatedDeltaJob job{.in = in, .state = state, .out = out, .shape = shape};
  gated_delta_rule_batch(pool, std::span(&job, 1));
}

void gated_delta_rule_batch(ThreadPool& pool, std::span<const GatedDeltaJob> jobs) {
  const detail::KernelTable& table = active_kernels();
  for (const GatedDeltaJob& j : jobs) {
    RECUR_CHECK(j.shape.n_k_heads > 0 && j.shape.n_v_heads % j.shape.n_k_heads == 0);
    RECUR_CHECK(j.shape.v_dim <= kMaxHeadDim);
  }
  run_jobs_in_runs(
      pool, jobs, [&](const GatedDeltaJob& j) { return gated_delta_tasks(j.shape, table); },
      [&](const GatedDeltaJob& j, std::int64_t t) { gated_delta_task(j, t, table); });
}

void gated_delta_gates(const float* a, const float* b, const float* a_log, const float* dt_bias,
                       float* g, float* beta, std::int64_t n_tokens, std::int64_t n_v_heads) {
  ref::gated_delta_gates(a, b, a_log, dt_bias, g, beta, n_tokens, n_v_heads);
}

void mamba2_scan(ThreadPool& pool, const Mamba2Inputs& in, float* state, float* y,
                 const Mamba2Shape& shape) {
  const Mamba2Job job{.in = in, .state = state, .y = y, .shape = shape};
  mamba2_scan_batch(pool, std::span(&job, 1));
}

void mamba2_scan_batch(ThreadPool& pool, std::span<const Mamba2Job> jobs) {
  for (const Mamba2Job& j : jobs) {
    RECUR_CHECK(j.shape.n_groups > 0 && j.shape.n_heads % j.shape.n_groups == 0);
  }
  const detail::KernelTable& table = active_kernels();
  run_jobs(
      pool, jobs, [](const Mamba2Job& j) { return j.shape.n_heads; },
      [&](const Mamba2Job& j, std::int64_t h) {
        const Mamba2Shape& s = j.shape;
        table.mamba2_head(j.in, j.state + h * s.head_dim * s.d_state, j.y, s, h);
      });
}

}  // namespace recur::kernels
