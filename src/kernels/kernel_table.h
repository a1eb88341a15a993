// Internal to kernels/: the kernels that differ per ISA, as one table of plain function pointers
// per ISA. Each table is defined in its ISA's own file (kernels_scalar.cc, kernels_avx2.cc,
// kernels_avx512.cc, which also holds AMX's), select_isa (isa.cc) points the active one at it,
// and kernels.cc / dispatch.cc call through it: active_kernels().silu(x, n).
// Kernels that are scalar on every ISA (RoPE, L2 norm, softmax, ...) are not in the table.
// Adding a kernel: a function in each ISA file, a field here, a call in kernels.cc.
#pragma once

#include <cstdint>

#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/matmul_isa.h"
#include "kernels/sampling.h"

namespace recur::kernels::detail {

// Output rows [b.m0, b.m1) x columns [b.n0, b.n1) of one weight (matmul_isa.h).
using MatmulBlockFn = void (*)(const MatmulOperands& op, const MatmulBlock& b);

// How one ISA multiplies by weights of one kind: the activations are prepared once per call (per
// quantization group size, a.group_size, for quantized kinds) into the layout `block` reads
// (op.xp), then dispatch.cc runs `block` over the output on the pool. dispatch.cc's matmul_path
// picks the path from the whole WeightView (quantized or not, then the dtype).
struct MatmulPath {
  // Bytes of the prepared activations of all of a's rows. Null: block reads op.x as given.
  std::int64_t (*x_bytes)(const ActivationRows& a) = nullptr;
  // Prepares x rows [r0, r1) (r0 a multiple of kPrepRows, r1 = min(n_rows, r0 + kPrepRows)).
  void (*prepare_x)(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) = nullptr;
  MatmulBlockFn block = nullptr;
  // Output columns per task in calls past kStreamRows (a multiple of the block's micro-tile).
  std::int64_t block_n = kMatmulBlockN;
  // Rows per task where the call has 4+ column blocks per thread (kMatmulBlockM otherwise).
  std::int64_t wide_block_m = kMatmulBlockM;
  // Grouped calls' parts of at most this many rows run in tasks of kStreamChunk columns and all
  // rows (kStreamRows: every call's).
  std::int64_t stream_rows = kStreamRows;
  // prepare_x reads every row through ActivationRows::row() and block reads only the prepared
  // rows, so a group's rows can be picked from x by index (MatmulGroup::rows) without a gather.
  bool indexed_rows = false;
  // prepare_x writes quant.h's quantized_rows_view layout, each row from its own x row alone: the
  // groups of a grouped call that pick rows of one x (a mixture's experts, each token in top-k of
  // them) get copies of rows quantized once (dispatch.cc share_quantized_rows).
  bool rowwise_quantized = false;
};

struct KernelTable {
  Isa isa = Isa::kScalar;

  // ---- matmul, per weight dtype (kernels.h matmul_fused)
  MatmulPath matmul_f32;
  MatmulPath matmul_f16;
  MatmulPath matmul_bf16;
  // bf16 calls of kLanesRows+ rows whose bf16 weights have kLanesMinCols+ rows in all (block
  // null: matmul_bf16 runs those too). Same bytes as matmul_bf16.
  MatmulPath matmul_bf16_lanes;
  // Quantized weights (quant.h's packed layout), 4 and 8 bits, activations prepared per group size.
  MatmulPath matmul_quant;

  // ---- attention (kernels.h attention_batch)
  // Head h of query i.
  void (*attention_query)(const float* q, const void* k_cache, const void* v_cache, float* out,
                          const AttentionShape& shape, std::int64_t i, std::int64_t h) = nullptr;
  // Queries i0 .. i0+n_i-1 x the heads of kv head kvh, at most kAttentionTileRows rows; same bytes
  // as attention_query on each. Null: attention_query per (query, head).
  void (*attention_tile)(const float* q, const void* k_cache, const void* v_cache, float* out,
                         const AttentionShape& shape, std::int64_t i0, std::int64_t n_i,
                         std::int64_t kvh) = nullptr;

  // ---- recurrences (kernels.h gated_delta_rule_batch, mamba2_scan_batch)
  // Value head j (state_j [Dk, Dv]) over all tokens.
  void (*gated_delta_head)(const GatedDeltaInputs& in, float* state_j, float* out,
                           const GatedDeltaShape& shape, std::int64_t j) = nullptr;
  // Value columns b0 .. b0+kGatedDeltaCols-1 of head j over all tokens; same bytes as
  // gated_delta_head. Null: gated_delta_head only.
  void (*gated_delta_cols)(const GatedDeltaInputs& in, float* state_j, float* out,
                           const GatedDeltaShape& shape, std::int64_t j, std::int64_t b0) = nullptr;
  // Head h (state_h [P, N]) over all tokens.
  void (*mamba2_head)(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                      std::int64_t h) = nullptr;

  // ---- norms, activations, conv1d: the kernels.h functions of the same names
  void (*rms_norm)(const float* x, const float* w, float* y, const RowsShape& shape,
                   float eps) = nullptr;
  void (*rms_norm_gated)(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, float eps) = nullptr;
  // group_size <= kMaxGateGroup.
  void (*rms_norm_gate_first)(const float* x, const float* z, const float* w, float* y,
                              const RowsShape& shape, std::int64_t group_size, float eps) = nullptr;
  void (*l2_norm)(float* x, const RowsShape& shape, float eps, float scale) = nullptr;
  void (*silu)(float* x, std::int64_t n) = nullptr;
  void (*sigmoid)(float* x, std::int64_t n) = nullptr;
  void (*swiglu)(const float* gate, const float* up, float* out, std::int64_t n) = nullptr;
  void (*geglu)(const float* gate, const float* up, float* out, std::int64_t n) = nullptr;
  void (*mul_sigmoid)(float* x, const float* gate, std::int64_t n) = nullptr;
  void (*add)(float* y, const float* x, std::int64_t n) = nullptr;
  void (*add_scaled)(float* y, const float* x, float s, std::int64_t n) = nullptr;
  void (*causal_conv1d)(const float* x, const float* w, const float* bias, float* state, float* y,
                        const Conv1dShape& shape) = nullptr;

  // ---- a draw's passes over the vocabulary: sampling.h's functions of the same names
  float (*sample_max)(const float* logits, std::int64_t n, const std::uint64_t* allowed) = nullptr;
  void (*sample_block_sums)(const SampleRow& row, double* blocks) = nullptr;
};

// Query rows (group heads x queries) of one kv head that one attention_tile call computes: each
// key block is widened (and read from the cache) once per tile, so at depth bigger tiles read
// less (128 against 64 rows: a prefill's attention 1.04-1.07x faster after 4k tokens on Zen 5).
// Its accumulators and block copies take ~0.5 MiB of the pool thread's stack.
inline constexpr std::int64_t kAttentionTileRows = 128;
// Value columns of the gated delta state one gated_delta_cols call walks through all its tokens.
inline constexpr std::int64_t kGatedDeltaCols = 64;
// Largest group rms_norm_gate_first takes (the vector form's stack buffer); kernels.cc sends
// wider groups to the reference.
inline constexpr std::int64_t kMaxGateGroup = 8192;

// One per ISA, each defined in its ISA's file.
extern const KernelTable kScalarKernels;
extern const KernelTable kAvx2Kernels;
extern const KernelTable kAvx2VnniKernels;
extern const KernelTable kAvx512Kernels;
extern const KernelTable kAmxKernels;

// The table of the ISA select_isa chose (the best this CPU has until then). isa.cc.
const KernelTable& active_kernels();

}  // namespace recur::kernels::detail
