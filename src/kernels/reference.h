// The scalar reference of every kernel: the plainest loops that follow the spec, in one fixed
// order, compiled without contraction (-ffp-contract=off). It is the oracle the tests compare each
// ISA with, and the "scalar" ISA itself. Kept forever; never optimised.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/sampling.h"

namespace recur::kernels::ref {

// y[r * ldy + n] = Σ_k x[r, k] · W[n, k] sequentially over k (bf16 W: x rounded to bf16 first).
void matmul(const float* x, std::int64_t n_rows, const WeightView& w, float* y, std::int64_t ldy);

void embedding_rows(const WeightView& table, const std::int32_t* ids, std::int64_t n_ids,
                    float* out);
void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps);
void rms_norm_gated(const float* x, const float* z, const float* w, float* y,
                    const RowsShape& shape, float eps);
void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, std::int64_t group_size, float eps);
void l2_norm(float* x, const RowsShape& shape, float eps, float scale);
void rope(float* x, const std::int32_t* positions, const RopeShape& shape, float theta);

// Head h of query i (the dispatcher parallelises over (query, head) pairs).
void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                     const AttentionShape& shape, std::int64_t i, std::int64_t h);

float silu(float x);
float sigmoid(float x);
float softplus(float x);
void silu(float* x, std::int64_t n);
void swiglu(const float* gate, const float* up, float* out, std::int64_t n);
void geglu(const float* gate, const float* up, float* out, std::int64_t n);
void sigmoid(float* x, std::int64_t n);
void softplus(float* x, std::int64_t n);
void mul_sigmoid(float* x, const float* gate, std::int64_t n);
void add(float* y, const float* x, std::int64_t n);
void add_scaled(float* y, const float* x, float s, std::int64_t n);
void softmax(float* x, std::int64_t n);

void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                   const Conv1dShape& shape);

// One value head j over all tokens.
void gated_delta_head(const GatedDeltaInputs& in, float* state_j, float* out,
                      const GatedDeltaShape& shape, std::int64_t j);
void gated_delta_gates(const float* a, const float* b, const float* a_log, const float* dt_bias,
                       float* g, float* beta, std::int64_t n_tokens, std::int64_t n_v_heads);

// One head h over all tokens.
void mamba2_head(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                 std::int64_t h);

// sampling.h's definitions, id by id.
float sample_max(const float* logits, std::int64_t n, const std::uint64_t* allowed);
void sample_block_sums(const SampleRow& row, double* blocks);

}  // namespace recur::kernels::ref
