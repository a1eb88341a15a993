// The CPU kernels the model families are built from (spec: ../shared/reference/model-families.md
// section 0, 2.5, 4.3). Plain functions over raw pointers; shapes in comments, row-major, f32
// activations. Each dispatches on active_isa() (isa.h); reference.h holds the scalar oracle.
// Invariant 1 (architecture.md section 3): for every kernel, the result for one row / token /
// query is the same bytes whatever the batch size, the chunking of a sequence and the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/dtype.h"
#include "kernels/isa.h"
#include "util/thread_pool.h"

namespace recur::kernels {

// ---- matmul (Linear): y = x · Wᵀ --------------------------------------------------------------
// x [n_rows, w.cols] f32, y [n_rows, w.rows] f32 (may not alias x).
// bf16 W: x is rounded to bf16 and products of bf16 pairs accumulate in f32 (design section 6).
// f32 / f16 W: f32 math. Parallel over output columns and rows; the reduction over K has one fixed
// order per ISA, so a row's result never depends on n_rows, its neighbours or the thread count.
void matmul(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w, float* y);

// Several Linears over the same x (q/k/v, gate/up, the Gated DeltaNet input projections): one
// activation conversion and one parallel run over all their output blocks, so a decode step
// pays one pool dispatch instead of one per matrix. Each y[i] gets the same bytes as
// matmul(pool, x, n_rows, outs[i].w, outs[i].y). All w.cols must be equal; at most
// kMaxFusedMatmuls outputs; no y may alias x.
struct MatmulOut {
  WeightView w;
  float* y = nullptr;
};
inline constexpr std::size_t kMaxFusedMatmuls = 8;
void matmul_fused(ThreadPool& pool, const float* x, std::int64_t n_rows,
                  std::span<const MatmulOut> outs);

// Row ids[i] of `table` [vocab, d] converted to f32 into out[i, :] ([n_ids, d]). Ids are
// checked by the caller (RECUR_CHECK here).
void embedding_rows(const WeightView& table, const std::int32_t* ids, std::int64_t n_ids,
                    float* out);
// The same in blocks of rows on the pool (a prompt's rows of a quantized table are each a
// dequantization).
void embedding_rows(ThreadPool& pool, const WeightView& table, const std::int32_t* ids,
                    std::int64_t n_ids, float* out);

// ---- norms (spec 0.1)
// ---------------------------------------------------------------------------- Rows of `width`
// values; row r of x starts at x + r * x_stride, of y at y + r * y_stride (strides 0 mean width),
// so per-head norms over interleaved buffers need no copy. x may equal y.
struct RowsShape {
  std::int64_t n_rows = 0;
  std::int64_t width = 0;
  std::int64_t x_stride = 0;
  std::int64_t y_stride = 0;
};

// y = w ⊙ (x · rsqrt(mean(x²) + eps)). w [width] f32 (tiny parameter vectors are converted to
// f32 at load; Qwen3.5's zero-centred weights have their 1 added there, model/blocks.h).
void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps);

// Norm-then-gate (Qwen3.5 GDN output norm, per value head):
//   y = (w ⊙ (x · rsqrt(mean(x²) + eps))) ⊙ silu(z). z rows use the x_stride layout as x.
void rms_norm_gated(const float* x, const float* z, const float* w, float* y,
                    const RowsShape& shape, float eps);

// Gate-then-norm (Mamba2 mixer norm): h = x ⊙ silu(z); each group of `group_size` values of a row
// is normalised on its own: y = w ⊙ (h · rsqrt(mean_group(h²) + eps)). group_size == width gives
// HF Mamba2 (n_groups 1); width / n_groups gives mamba_ssm / llama.cpp. z as x.
void rms_norm_gate_first(const float* x, const float* z, const float* w, float* y,
                         const RowsShape& shape, std::int64_t group_size, float eps);

// Per row: x ← x · rsqrt(Σx² + eps)  (FLA l2norm, eps 1e-6 in Qwen3.5), then · scale.
void l2_norm(float* x, const RowsShape& shape, float eps, float scale);

// ---- RoPE (spec 0.2): NeoX rotate-half pairing (j, j + rotary_dim/2) on the first rotary_dim
// features of each head; the rest pass through. inv_freq[i] = 1 / theta^(2i / rotary_dim) in f32,
// angle = f32(pos) · inv_freq[i].
struct RopeShape {
  std::int64_t n_tokens = 0;
  std::int64_t n_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t rotary_dim = 0;    // even, <= head_dim
  std::int64_t head_stride = 0;   // floats between heads of a token (0: head_dim)
  std::int64_t token_stride = 0;  // floats between tokens (0: n_heads * head_stride)
};
// x [n_tokens, n_heads, head_dim] (strided as above), positions [n_tokens], in place.
void rope(float* x, const std::int32_t* positions, const RopeShape& shape, float theta);

// ---- attention (spec 0.3): causal GQA over a KV cache ------------------------------------------
// The cache holds K (after norm and RoPE) and V for tokens 0..n_kv-1, by default as [n_kv,
// n_kv_heads, head_dim] (see the strides below), in kv_dtype (kF32 or kBF16). Query i (absolute
// position pos0 + i) attends keys 0..pos0+i, so the caller appends the chunk's K/V to the cache
// first (n_kv >= pos0 + n_q). q head h reads kv head h / (n_heads / n_kv_heads). Keys are walked in
// blocks of kAttentionBlock aligned to absolute positions with a fixed-order online softmax in f32,
// so a query's output does not depend on how the prompt was chunked.
inline constexpr std::int64_t kAttentionBlock = 64;
struct AttentionShape {
  std::int64_t n_q = 0;   // queries (tokens) in this call, one sequence
  std::int64_t pos0 = 0;  // absolute position of query 0
  std::int64_t n_kv = 0;  // tokens in the cache (>= pos0 + n_q)
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;
  std::int64_t head_dim = 0;        // <= kMaxHeadDim
  std::int64_t q_head_stride = 0;   // floats between q heads of a token (0: head_dim)
  std::int64_t q_token_stride = 0;  // floats between q tokens (0: n_heads * q_head_stride)
  float scale = 0.0f;               // usually head_dim^-0.5
  DType kv_dtype = DType::kF32;
  // Where K/V element d of token j, kv head h lies: (j · token stride + h · head stride + d).
  // The defaults are the token-major [n_kv, n_kv_heads, head_dim] layout; a head-major cache
  // ([n_kv_heads, capacity, head_dim]) gives each kv head one contiguous stream of rows.
  std::int64_t kv_token_stride = 0;  // 0: n_kv_heads * head_dim
  std::int64_t kv_head_stride = 0;   // 0: head_dim
  // [n_heads] a learned logit per q head that joins every query's softmax with no value (gpt-oss's
  // attention sinks): out = Σ p_j v_j / (Σ p_j + exp(sink − m)), m the running max of the scores.
  // nullptr: none.
  const float* sinks = nullptr;
  std::int64_t kv_token_step() const {
    return kv_token_stride != 0 ? kv_token_stride : n_kv_heads * head_dim;
  }
  std::int64_t kv_head_step() const { return kv_head_stride != 0 ? kv_head_stride : head_dim; }
};
inline constexpr std::int64_t kMaxHeadDim = 512;
// q as above; out [n_q, n_heads, head_dim] contiguous.
void attention(ThreadPool& pool, const float* q, const void* k_cache, const void* v_cache,
               float* out, const AttentionShape& shape);
// Several sequences' attention in one dispatch (a batched decode step: one query per sequence,
// which alone would be a dispatch of a few microseconds each). Every job's bytes are those of
// attention() on it alone.
struct AttentionJob {
  const float* q = nullptr;
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  float* out = nullptr;
  AttentionShape shape;
};
void attention_batch(ThreadPool& pool, std::span<const AttentionJob> jobs);

// ---- activations (elementwise unless said; in place where the output is the input) ----------
void silu(float* x, std::int64_t n);                                          // x · sigmoid(x)
void swiglu(const float* gate, const float* up, float* out, std::int64_t n);  // silu(g) · u
// gelu_tanh(g) · u, torch's gelu(approximate="tanh"): 0.5·g·(1 + tanh(√(2/π)·(g + 0.044715·g³))).
// The vector ISAs compute it as g·σ(2z), z = √(2/π)·(g + 0.044715·g³), the same function: within
// 2.5e-7·(1 + 2|z|) relative (the rounding of z, amplified by exp) plus 1e-30 absolute of the exact
// value for every float g; the scalar reference is torch's f32 form, within 2e-6·|g| absolute.
void geglu(const float* gate, const float* up, float* out, std::int64_t n);
void sigmoid(float* x, std::int64_t n);
void softplus(float* x, std::int64_t n);                        // torch: x > 20 ? x : log1p(exp(x))
void mul_sigmoid(float* x, const float* gate, std::int64_t n);  // x ← x · sigmoid(gate)
void add(float* y, const float* x, std::int64_t n);             // y ← y + x (residual)
// y ← y + s · x, rounded after the product and after the sum (no fma): a mixture's weighted sum of
// its experts, a scaled residual. x and y do not overlap.
void add_scaled(float* y, const float* x, float s, std::int64_t n);
void softmax(float* x, std::int64_t n);  // one row, max-subtracted

// ---- causal depthwise conv1d over time with carried state (spec 2.5, 4.3) -------------------
// Per channel c: y_t[c] = act( Σ_{j<K} w[c, j] · window_t[j] + bias[c] ) where window_t is the
// K-1 previous inputs (from `state` at the start) followed by x_t. Exact for any split.
struct Conv1dShape {
  std::int64_t n_tokens = 0;
  std::int64_t channels = 0;
  std::int64_t kernel = 0;    // K (4 in all families here)
  std::int64_t x_stride = 0;  // floats between input tokens (0: channels)
  std::int64_t y_stride = 0;  // floats between output tokens (0: channels)
  bool apply_silu = true;
  // Floats between w's taps and between state's rows (0: channels): a slice of a wider conv's
  // channels, run as its own call (the channels are independent).
  std::int64_t tap_stride = 0;
};
// x [n_tokens, channels]; w [K, channels] f32, tap-major (HF's [C, 1, K] transposed at load, so
// each tap's weights are contiguous across channels); bias [channels] or null;
// state [K-1, channels], oldest first, zeros at sequence start, updated to the last K-1 inputs;
// y [n_tokens, channels], may alias x only when the strides match.
void causal_conv1d(const float* x, const float* w, const float* bias, float* state, float* y,
                   const Conv1dShape& shape);

// ---- gated delta rule (Qwen3.5 GDN, spec 2.5), per-token recurrence ---------------------------
// Per value head j (q/k head j / (n_v_heads / n_k_heads)), state S_j [Dk, Dv] f32, per token:
//   S ← exp(g)·S;  u = β·(v − Sᵀk);  S ← S + k ⊗ u;  o = Sᵀq
// q, k are already L2-normed (q also scaled by Dk^-0.5).
struct GatedDeltaShape {
  std::int64_t n_tokens = 0;
  std::int64_t n_k_heads = 0;   // Hk
  std::int64_t n_v_heads = 0;   // Hv, a multiple of Hk
  std::int64_t k_dim = 0;       // Dk
  std::int64_t v_dim = 0;       // Dv
  std::int64_t qkv_stride = 0;  // floats between tokens of q, k and v (conv output row width)
};
struct GatedDeltaInputs {
  const float* q = nullptr;     // [n_tokens, Hk, Dk] (token stride qkv_stride)
  const float* k = nullptr;     // [n_tokens, Hk, Dk] (token stride qkv_stride)
  const float* v = nullptr;     // [n_tokens, Hv, Dv] (token stride qkv_stride)
  const float* g = nullptr;     // [n_tokens, Hv] log-decay (<= 0)
  const float* beta = nullptr;  // [n_tokens, Hv]
};
// state [Hv, Dk, Dv] in/out; out [n_tokens, Hv, Dv]. Parallel over value heads.
void gated_delta_rule(ThreadPool& pool, const GatedDeltaInputs& in, float* state, float* out,
                      const GatedDeltaShape& shape);
// Several sequences' recurrences in one dispatch (a batched decode step); each job's bytes are
// those of gated_delta_rule on it alone.
struct GatedDeltaJob {
  GatedDeltaInputs in;
  float* state = nullptr;
  float* out = nullptr;
  GatedDeltaShape shape;
};
void gated_delta_rule_batch(ThreadPool& pool, std::span<const GatedDeltaJob> jobs);

// The GDN gates from in_proj_a / in_proj_b outputs (spec 2.5), a, b [n_tokens, Hv]:
//   g = −exp(A_log) · softplus(a + dt_bias),  beta = sigmoid(b). A_log, dt_bias [Hv] f32.
void gated_delta_gates(const float* a, const float* b, const float* a_log, const float* dt_bias,
                       float* g, float* beta, std::int64_t n_tokens, std::int64_t n_v_heads);

// ---- Mamba2 SSM, per-token recurrence (spec 4.3)
// ------------------------------------------------- Per head h (group h / (n_heads / n_groups)),
// state S_h [head_dim, d_state] f32, per token:
//   dt = clamp(softplus(dt_raw + dt_bias), dt_min, dt_max);  dA = exp(dt · −exp(A_log))
//   S ← dA·S + dt · x ⊗ B;  y = S·C + D·x
struct Mamba2Shape {
  std::int64_t n_tokens = 0;
  std::int64_t n_heads = 0;
  std::int64_t head_dim = 0;   // P
  std::int64_t d_state = 0;    // N
  std::int64_t n_groups = 0;   // G
  std::int64_t x_stride = 0;   // floats between tokens of x, B, C (conv output row width)
  std::int64_t dt_stride = 0;  // floats between tokens of dt_raw
  float dt_min = 0.0f;         // time_step_limit
  float dt_max = 0.0f;         // +inf for (0, inf)
};
struct Mamba2Inputs {
  const float* x = nullptr;        // [n_tokens, H, P]
  const float* b = nullptr;        // [n_tokens, G, N]
  const float* c = nullptr;        // [n_tokens, G, N]
  const float* dt_raw = nullptr;   // [n_tokens, H] before bias and softplus
  const float* dt_bias = nullptr;  // [H]
  const float* a_log = nullptr;    // [H]
  const float* d = nullptr;        // [H]
};
// state [H, P, N] in/out; y [n_tokens, H, P]. Parallel over heads.
void mamba2_scan(ThreadPool& pool, const Mamba2Inputs& in, float* state, float* y,
                 const Mamba2Shape& shape);
// Several sequences' scans in one dispatch (a batched decode step), parallel over every job's
// heads; each job's bytes are those of mamba2_scan on it alone.
struct Mamba2Job {
  Mamba2Inputs in;
  float* state = nullptr;
  float* y = nullptr;
  Mamba2Shape shape;
};
void mamba2_scan_batch(ThreadPool& pool, std::span<const Mamba2Job> jobs);

}  // namespace recur::kernels
