// Shared building blocks the families compose their layers from, each a spec section of
// ../shared/reference/model-families.md: norms (0.1), (gated) attention with RoPE (0.2-0.4, 2.4),
// SwiGLU MLP (0.4), Gated DeltaNet mixer (2.5), Mamba2 mixer (4.3). Each block reads x
// [n_rows, d_model] and writes its output [n_rows, d_model]; per-sequence state is reached through
// ForwardCtx chunks. Blocks know no family and no checkpoint quirk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

// How a checkpoint stores a norm's multiplier. Zero-centred: Qwen3.5's norms are (1 + w) ⊙ norm(x)
// (spec 0.1) and its files store w, except MLX conversions, which store 1 + w
// (TensorVisitor::norms_hold_one). Gemma's are (1 + w) too, but every format stores w.
enum class NormForm : std::uint8_t { kPlain, kZeroCentred, kGemma };

struct NormW {
  std::vector<float> w;  // [width] f32, as the kernel multiplies (1 already added if offset)
  float eps = 1e-6f;
  NormForm form = NormForm::kPlain;
};
// Reads the norm's weight vector [width] and folds in the 1 of a zero-centred or Gemma norm, so the
// forward multiplies by w alone (the same f32 value the kernel computed as 1 + w).
void visit_norm(TensorVisitor& v, const std::string& name, std::int64_t width, NormW* n);
// A depthwise conv kernel as read from the checkpoint, [channels, 1, K], reordered in place to the
// tap-major [K, channels] that kernels::causal_conv1d reads (left alone when not that size).
void conv_taps_major(std::vector<float>* w, std::int64_t channels, std::int64_t kernel);
// y[r] += b for each of n rows of b.size() floats (a Linear's bias); no-op for an empty b.
void add_bias(float* y, const std::vector<float>& b, std::int64_t n);
// y = norm(x) over rows of `width`; x may equal y.
void apply_norm(const NormW& n, const float* x, float* y, std::int64_t n_rows, std::int64_t width);

// Causal GQA self-attention with q/k norm and (partial) NeoX RoPE; optional per-head output gate
// (q_proj rows per head [q | gate], spec 0.3). Llama: no q/k norm, optional biases, and RoPE
// frequencies from a table (rope_scaling llama3).
struct AttentionW {
  kernels::WeightView q, k, v, o;
  NormW q_norm, k_norm;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, rotary_dim = 0;
  float rope_theta = 1e6f;
  std::vector<float> inv_freq;  // [rotary_dim / 2]; empty: 1 / theta^(2i / rotary_dim)
  // YaRN's attention factor: cos and sin are multiplied by it (with a table only).
  float rope_attention_factor = 1.0f;
  float scale = 0.0f;  // of the scores; 0: head_dim^-0.5 (Gemma: query_pre_attn_scalar^-0.5)
  // > 0: a query sees the last `window` positions (itself included), kept in a ring (state.h).
  std::int64_t window = 0;
  bool output_gate = false;
  bool qk_norm = true;
  bool bias = false;        // q/k/v/o_proj.bias (attention_bias)
  bool sinks = false;       // a learned softmax logit per head, self_attn.sinks [n_heads] (gpt-oss)
  std::vector<float> sink;  // bound when `sinks`
  std::vector<float> q_bias, k_bias, v_bias, o_bias;  // bound when `bias`
  kernels::DType kv_dtype = kernels::DType::kF32;
  std::size_t layer = 0;  // index into SequenceState layers
  // Tensor names are <layer prefix><module><q|k|v|o>_proj.*: Nemotron-H names its "mixer.";
  // LFM2 names the output out_proj and the q/k norms q_layernorm / k_layernorm.
  std::string module = "self_attn.";
  std::string o_proj = "o_proj", q_norm_name = "q_norm", k_norm_name = "k_norm";
};
void visit_attention(TensorVisitor& v, const std::string& p, std::int64_t d_model, AttentionW* w);
std::int64_t attention_scratch_per_row(const AttentionW& w);
LayerStateSpec attention_state(const AttentionW& w);
void attention_block(ForwardCtx& ctx, const AttentionW& w, const float* x, float* out);

// down(silu(gate(x) [+ b]) ⊙ (up(x) [+ b])) [+ b].
struct MlpW {
  kernels::WeightView gate, up, down;
  bool bias = false;  // gate/up/down_proj.bias (Llama's mlp_bias)
  std::vector<float> gate_bias, up_bias, down_bias;
  // Falcon-H1's mlp_multipliers[0]: silu(gate(x) · gate_scale); inside the silu, so it cannot be
  // folded into the output.
  float gate_scale = 1.0f;
  // Tensor names are <layer prefix><module><gate|up|down>_proj.*: Falcon-H1 names its
  // "feed_forward.", LFM2 its Linears w1 / w3 / w2.
  std::string module = "mlp.";
  std::string proj[3] = {"gate_proj", "up_proj", "down_proj"};
};
void visit_mlp(TensorVisitor& v, const std::string& p, std::int64_t d_model, std::int64_t d_ff,
               MlpW* w);
std::int64_t mlp_scratch_per_row(const MlpW& w);
void swiglu_mlp(ForwardCtx& ctx, const MlpW& w, const float* x, float* out);
// down(gelu_tanh(gate(x)) ⊙ up(x)): Gemma's MLP (torch's gelu with approximate="tanh").
void geglu_mlp(ForwardCtx& ctx, const MlpW& w, const float* x, float* out);

// Gated DeltaNet token mixer (Qwen3.5 linear_attn), per-token recurrence.
struct GatedDeltaW {
  // Interleaved (Qwen3-Next, spec 3.3): in_qkv holds in_proj_qkvz, rows per key head
  // [q (Dk) | k (Dk) | v (r·Dv) | z (r·Dv)], and in_b holds in_proj_ba, rows per key head
  // [b (r) | a (r)]; in_z and in_a stay unbound. The block de-interleaves the matmul outputs into
  // Qwen3.5's flat order, so the conv, state and captures are the same in both layouts.
  kernels::WeightView in_qkv, in_z, in_b, in_a, out;
  std::vector<float> conv;            // [K, conv_dim], tap-major (conv_taps_major)
  std::vector<float> a_log, dt_bias;  // [Hv]
  NormW norm;                         // gated norm weight [Dv]
  bool interleaved = false;
  std::int64_t n_k_heads = 0, n_v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 0;
  std::size_t layer = 0;
  std::int64_t conv_dim() const { return 2 * n_k_heads * k_dim + n_v_heads * v_dim; }
};
void visit_gated_delta(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                       GatedDeltaW* w);
std::int64_t gated_delta_scratch_per_row(const GatedDeltaW& w);
LayerStateSpec gated_delta_state(const GatedDeltaW& w);
void gated_delta_block(ForwardCtx& ctx, const GatedDeltaW& w, const float* x, float* out);

// Mamba2 mixer: in_proj → conv → SSM scan → gated norm → out_proj.
struct Mamba2W {
  // How y meets the gate z: gate-then-norm w ⊙ norm_g(y ⊙ silu(z)) (Mamba2, Granite, Falcon-H1's
  // mamba_norm_before_gate false), norm-then-gate w ⊙ norm_g(y) ⊙ silu(z), or no norm at all,
  // y ⊙ silu(z) (Falcon-H1's mamba_rms_norm false: no norm.weight in the checkpoint).
  enum class Gate : std::uint8_t { kNormAfterGate, kNormBeforeGate, kNoNorm };
  kernels::WeightView in, out;
  std::vector<float> conv, conv_bias;    // [K, conv_dim] tap-major, [conv_dim] (empty: no bias)
  std::vector<float> a_log, dt_bias, d;  // [H]
  NormW norm;                            // [d_inner], gate-then-norm
  std::int64_t n_heads = 0, head_dim = 0, d_state = 0, n_groups = 0, conv_kernel = 0;
  float dt_min = 0.0f, dt_max = 0.0f;
  bool conv_bias_present = true;
  std::size_t layer = 0;
  // Tensor names are <layer prefix><module>in_proj.weight, ...: Granite 4.0-H names its "mamba.".
  std::string module = "mixer.";
  Gate gate = Gate::kNormAfterGate;
  // The gated norm over the whole d_inner row (transformers' GraniteMoeHybridRMSNormGated) rather
  // than per group of d_inner / n_groups (mamba_ssm, Mamba2, Nemotron-H, Falcon-H1); alike at G 1.
  bool norm_whole_row = false;
  // in_proj.bias [in_width()] and out_proj.bias [d_model] (Granite 4.0-H's mamba_proj_bias).
  bool proj_bias = false;
  std::vector<float> in_bias, out_bias;
  // Per-column multipliers of the in_proj output [in_width()] (Falcon-H1's mup vector times its
  // ssm_in_multiplier, which in_proj's linearity lets move past the matmul); empty: none.
  std::vector<float> in_scale;
  std::int64_t d_inner() const { return n_heads * head_dim; }
  std::int64_t conv_dim() const { return d_inner() + 2 * n_groups * d_state; }
  std::int64_t in_width() const { return d_inner() + conv_dim() + n_heads; }
};
void visit_mamba2(TensorVisitor& v, const std::string& p, std::int64_t d_model, Mamba2W* w);
std::int64_t mamba2_scratch_per_row(const Mamba2W& w);
LayerStateSpec mamba2_state(const Mamba2W& w);
void mamba2_block(ForwardCtx& ctx, const Mamba2W& w, const float* x, float* out);

}  // namespace recur::model
