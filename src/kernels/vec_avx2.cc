// The vector kernels of vec_impl.h built for avx2 (per-file flags in CMakeLists.txt).
#define RECUR_VEC_NS avx2
#include "kernels/vec_impl.h"
#include "kernels/vec_isa.h"

namespace recur::kernels::detail {

void attention_query_avx2(const float* q, const void* k_cache, const void* v_cache, float* out,
                          const AttentionShape& shape, std::int64_t i, std::int64_t h) {
  avx2::attention_query(q, k_cache, v_cache, out, shape, i, h);
}

void attention_tile_avx2(const float* q, const void* k_cache, const void* v_cache, float* out,
                         const AttentionShape& shape, std::int64_t i0, std::int64_t n_i,
                         std::int64_t kvh) {
  avx2::attention_tile(q, k_cache, v_cache, out, shape, i0, n_i, kvh);
}

void gated_delta_head_avx2(const GatedDeltaInputs& in, float* state_j, float* out,
                           const GatedDeltaShape& shape, std::int64_t j) {
  avx2::gated_delta_head(in, state_j, out, shape, j);
}

void gated_delta_cols_avx2(const GatedDeltaInputs& in, float* state_j, float* out,
                           const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) {
  avx2::gated_delta_cols(in, state_j, out, shape, j, b0);
}

void mamba2_head_avx2(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                      std::int64_t h) {
  avx2::mamba2_head(in, state_h, y, shape, h);
}

void rms_norm_avx2(const float* x, const float* w, float* y, const RowsShape& shape, float eps) {
  avx2::rms_norm(x, w, y, shape, eps);
}

void silu_avx2(float* x, std::int64_t n) { avx2::silu(x, n); }
void sigmoid_avx2(float* x, std::int64_t n) { avx2::sigmoid(x, n); }
void swiglu_avx2(const float* gate, const float* up, float* out, std::int64_t n) {
  avx2::swiglu(gate, up, out, n);
}
void mul_sigmoid_avx2(float* x, const float* gate, std::int64_t n) {
  avx2::mul_sigmoid(x, gate, n);
}

void rms_norm_gated_avx2(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, float eps) {
  avx2::rms_norm_gated(x, z, w, y, shape, eps);
}
void causal_conv1d_avx2(const float* x, const float* w, const float* bias, float* state, float* y,
                        const Conv1dShape& shape) {
  avx2::causal_conv1d(x, w, bias, state, y, shape);
}

void rms_norm_gate_first_avx2(const float* x, const float* z, const float* w, float* y,
                              const RowsShape& shape, std::int64_t group_size, float eps) {
  avx2::rms_norm_gate_first(x, z, w, y, shape, group_size, eps);
}

}  // namespace recur::kernels::detail
