// Per-ISA selection for the kernels with vector paths: matmul, attention and the recurrences.
#include <algorithm>

#include "kernels/matmul_impl.h"
#include "kernels/reference.h"

namespace recur::kernels::detail {
namespace {

constexpr std::int64_t kScalarColumnBlock = 64;

void matmul_scalar(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w,
                   float* y) {
  const std::int64_t n_blocks = (w.rows + kScalarColumnBlock - 1) / kScalarColumnBlock;
  pool.run(static_cast<std::size_t>(n_blocks), [&](std::size_t b) {
    const std::int64_t n0 = static_cast<std::int64_t>(b) * kScalarColumnBlock;
    const std::int64_t nb = std::min(kScalarColumnBlock, w.rows - n0);
    ref::matmul(x, n_rows, w.slice_rows(n0, nb), y + n0, w.rows);
  });
}

}  // namespace

void matmul_dispatch(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w,
                     float* y, Isa isa) {
  switch (isa) {
    default:
      matmul_scalar(pool, x, n_rows, w, y);
      return;
  }
}

void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                     const AttentionShape& shape, std::int64_t i, std::int64_t h, Isa) {
  ref::attention_query(q, k_cache, v_cache, out, shape, i, h);
}

void gated_delta_head(const GatedDeltaInputs& in, float* state_j, float* out,
                      const GatedDeltaShape& shape, std::int64_t j, Isa) {
  ref::gated_delta_head(in, state_j, out, shape, j);
}

void mamba2_head(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                 std::int64_t h, Isa) {
  ref::mamba2_head(in, state_h, y, shape, h);
}

}  // namespace recur::kernels::detail
