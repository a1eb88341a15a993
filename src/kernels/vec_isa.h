// Internal to kernels/: entry points of the vector kernels (vec_impl.h) per ISA file.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace recur::kernels::detail {

// Largest group the vector gate-then-norm handles (its stack buffer); wider groups use the
// reference. Must equal kMaxGroup in vec_impl.h.
inline constexpr std::int64_t kMaxGateGroup = 8192;

// Query rows (group heads x queries) of one kv head that one attention task computes together.
inline constexpr std::int64_t kAttentionTileRows = 64;

// Value columns of the gated delta state one prefill task walks through all its tokens.
inline constexpr std::int64_t kGatedDeltaCols = 64;

#define RECUR_DECLARE_VEC(isa)                                                                     \
  void attention_query_##isa(const float* q, const void* k_cache, const void* v_cache, float* out, \
                             const AttentionShape& shape, std::int64_t i, std::int64_t h);         \
  void attention_tile_##isa(const float* q, const void* k_cache, const void* v_cache, float* out,  \
                            const AttentionShape& shape, std::int64_t i0, std::int64_t n_i,        \
                            std::int64_t kvh);                                                     \
  void gated_delta_head_##isa(const GatedDeltaInputs& in, float* state_j, float* out,              \
                              const GatedDeltaShape& shape, std::int64_t j);                       \
  void gated_delta_cols_##isa(const GatedDeltaInputs& in, float* state_j, float* out,              \
                              const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0);      \
  void mamba2_head_##isa(const Mamba2Inputs& in, float* state_h, float* y,                         \
                         const Mamba2Shape& shape, std::int64_t h);                                \
  void rms_norm_##isa(const float* x, const float* w, float* y, const RowsShape& shape,            \
                      float eps);                                                                  \
  void silu_##isa(float* x, std::int64_t n);                                                       \
  void sigmoid_##isa(float* x, std::int64_t n);                                                    \
  void swiglu_##isa(const float* gate, const float* up, float* out, std::int64_t n);               \
  void mul_sigmoid_##isa(float* x, const float* gate, std::int64_t n);                             \
  void rms_norm_gated_##isa(const float* x, const float* z, const float* w, float* y,              \
                            const RowsShape& shape, float eps);                                    \
  void rms_norm_gate_first_##isa(const float* x, const float* z, const float* w, float* y,         \
                                 const RowsShape& shape, std::int64_t group_size, float eps);      \
  void causal_conv1d_##isa(const float* x, const float* w, const float* bias, float* state,        \
                           float* y, const Conv1dShape& shape);
RECUR_DECLARE_VEC(avx2)
RECUR_DECLARE_VEC(avx512)
#undef RECUR_DECLARE_VEC

}  // namespace recur::kernels::detail
