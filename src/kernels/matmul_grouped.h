// Many small matmuls in one parallel run: the experts of a mixture-of-experts layer each multiply
// their own few rows (512 prompt tokens give Qwen3-30B-A3B's 128 experts about 32 rows each), and
// a pool dispatch per expert and matrix cost more than the products at decode and left threads
// idle at the end of every small call in prefill.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kernels.h"
#include "util/thread_pool.h"

namespace recur::kernels {

// One matmul_fused call: its activations x [n_rows, K] and the Linears over them (all K equal, at
// most kMaxFusedMatmuls, no y aliasing any group's x).
struct MatmulGroup {
  const float* x = nullptr;
  std::int64_t n_rows = 0;
  std::span<const MatmulOut> outs;
  // Non-null: the group's row r is x's row rows[r] (x then holds rows of K), so a mixture's
  // experts read their tokens where they are: the quantized and bf16 paths quantize or round them
  // from there, the others get them gathered. The bytes are those of the gathered rows.
  const std::int32_t* rows = nullptr;
};

// Each group's y[i] gets the bytes of matmul(pool, group.x, group.n_rows, outs[i].w, outs[i].y):
// the same blocks run, only together (groups of 0 rows are skipped).
void matmul_grouped(ThreadPool& pool, std::span<const MatmulGroup> groups);

}  // namespace recur::kernels
