// Internal to kernels/: the per-ISA entry points the dispatcher (kernels.cc) calls. Each ISA's
// code lives in its own file compiled with that ISA's flags and is only reached when detected.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace recur::kernels::detail {

// y_i = x · W_iᵀ for every output on `isa`: one activation preparation, then one parallel run
// over the blocks of output columns (and row blocks for big batches) of all outputs.
void matmul_dispatch(ThreadPool& pool, const float* x, std::int64_t n_rows,
                     std::span<const MatmulOut> outs, Isa isa);

void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                     const AttentionShape& shape, std::int64_t i, std::int64_t h, Isa isa);
void gated_delta_head(const GatedDeltaInputs& in, float* state_j, float* out,
                      const GatedDeltaShape& shape, std::int64_t j, Isa isa);
void mamba2_head(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                 std::int64_t h, Isa isa);
void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps, Isa isa);

}  // namespace recur::kernels::detail
