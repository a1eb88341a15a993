// A deliberately simple float64 forward pass per family, written from
// ../shared/reference/model-families.md independently of src/model/blocks.* and the kernels: whole
// sequence at once, plain loops, no state reuse. Tests only: the oracle for engine logits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.h"

namespace recur::model::reference {

using Vec = std::vector<double>;

// A checkpoint tensor converted to float64, row-major.
struct Tensor {
  std::vector<std::int64_t> shape;
  Vec v;
  bool bf16 = false;  // stored as bf16: the engine rounds matmul inputs to bf16 for these
  // Quantized (set_quantization): v holds the dequantized weights, and matvec rounds x to int8 per
  // group of this size as the engine's quantized matmul does.
  int quant_group = 0;
  std::int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::int64_t cols() const {
    return shape.size() < 2 ? 1 : static_cast<std::int64_t>(v.size()) / shape[0];
  }
};

// Reads `name` (RECUR_CHECK that it exists).
Tensor load(const Checkpoint& ck, const std::string& name);
// From now on load() returns every 2-D "*.weight" whose width divides by group_size quantized as
// --quantize does (MLX's quantizer, then dequantized; the modules model::mlx_keeps_at_8_bits names
// for `family`, a FamilyInfo::name, at 8 bits in groups of 64, those model::mlx_keeps_floating
// names as they are); bits 0 turns it off. Tests only.
void set_quantization(int bits, int group_size, std::string_view family = {});

// y = W x for W [rows, cols]; for a bf16 W, x is first rounded to bf16 as the engine's matmul
// does by design (architecture section 6), so bf16 checkpoints can be checked tightly too.
Vec matvec(const Tensor& w, const Vec& x);
// Plain RMSNorm: w ⊙ x / sqrt(mean(x²) + eps); zero_centred uses (1 + w).
Vec rms_norm(const Vec& x, const Vec& w, double eps, bool zero_centred);
double silu(double x);
double sigmoid(double x);
double softplus(double x);
// NeoX rotate-half RoPE on the first rotary_dim features of one head, in place.
void rope(double* head, std::int64_t rotary_dim, std::int64_t pos, double theta);

// Logits [n_tokens][vocab] for every position of `tokens`, per family.
std::vector<Vec> forward_qwen3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_qwen3_5(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_mamba2(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_gemma3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_llama(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_qwen3_moe(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_lfm2(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
// Where forward_lfm2's short conv rounds its intermediates (in_proj's output, B ⊙ x, the conv's
// output, C ⊙ conv): float64 by default; f32 rounds each to float as the engine holds them, bf16
// as transformers does in a bf16 model. Tests measuring where LFM2's bf16 error comes from.
enum class Rounding : std::uint8_t { kF64, kF32, kBf16 };
struct ShortConvRounding {
  Rounding in_proj = Rounding::kF64, bx = Rounding::kF64, conv = Rounding::kF64,
           gated = Rounding::kF64;
};
void set_short_conv_rounding(const ShortConvRounding& r);

std::vector<Vec> forward_granite_hybrid(const Checkpoint& ck,
                                        const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_nemotron_h(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_falcon_h1(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_gpt_oss(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
std::vector<Vec> forward_smollm3(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);

// The Mamba2 mixer of a hybrid layer over a whole sequence (reference_ssm.cc): x [T][d_model] →
// [T][d_model], tensors named <m>in_proj.weight, <m>conv1d.weight, ...
struct Mamba2Geometry {
  std::int64_t n_heads = 0, head_dim = 0, d_state = 0, n_groups = 1, kernel = 4;
  std::int64_t norm_groups = 0;  // the gated norm's groups; 0: n_groups (1: the whole row)
  double eps = 1e-5, dt_min = 0.0, dt_max = 1e300;
  bool conv_bias = true;
  bool proj_bias = false;  // in_proj.bias and out_proj.bias
};
std::vector<Vec> mamba2_mixer(const Checkpoint& ck, const std::string& m, const Mamba2Geometry& g,
                              const std::vector<Vec>& x);

// Qwen3.5's mixers (reference_qwen3_5.cc), shared with the MoE variants (reference_qwen3_next.cc).
struct Qwen35Geometry {
  std::int64_t H, Hkv, hd, rot, Hk, Hv, Dk, Dv, K;
  double eps, theta;
};
Qwen35Geometry qwen3_5_geometry(const Checkpoint& ck);
// Output-gated attention with partial RoPE over x [T][d]: o_proj's output per position.
std::vector<Vec> qwen3_5_gated_attention(const Checkpoint& ck, const std::string& p,
                                         const Qwen35Geometry& g, const std::vector<Vec>& x);
// The Gated DeltaNet's input projections per position, in Qwen3.5's flat order: mixed
// [q | k | v] (before the conv), z [Hv·Dv], b [Hv], a [Hv].
struct GdnProjections {
  std::vector<Vec> mixed, z, b, a;
};
GdnProjections qwen3_5_gdn_projections(const Checkpoint& ck, const std::string& p,
                                       const std::vector<Vec>& x);
// The rest of the Gated DeltaNet (conv, recurrence, gated norm, out_proj) per position.
std::vector<Vec> qwen3_5_gated_delta(const Checkpoint& ck, const std::string& p,
                                     const Qwen35Geometry& g, const GdnProjections& proj);

// Qwen3-Next and Qwen3.5-MoE (reference_qwen3_next.cc).
std::vector<Vec> forward_qwen3_next(const Checkpoint& ck, const std::vector<std::int32_t>& tokens);
// Router near-ties. A token whose k-th and (k+1)-th expert probabilities are within `margin`
// (ln p_k - ln p_{k+1} < margin) has no top k the reference can claim over the engine: rounding
// the engine does by design (f32 sums, bf16 or int8 matmul inputs) decides it. With `routes` set
// (the engine's choices in its order, model/moe.h set_route_log), the reference takes the engine's
// experts at such a near-tie and its own everywhere else; nullptr: its own everywhere.
void set_engine_routes(const std::vector<std::int32_t>* routes, double margin);
struct RoutingStats {
  std::int64_t decisions = 0, near_ties_taken = 0;
  double min_gap = 1e300;  // the smallest ln p_k - ln p_{k+1} seen (with routes set)
};
RoutingStats routing_stats();  // since the last set_engine_routes
// The next routing decision's experts (in the engine's log order: layer by layer, row by row):
// the k largest `keys` (log-probabilities, logits, or biased sigmoid scores; the lower index first
// on equal keys), or the engine's when set_engine_routes gave its log and keys[k-1] - keys[k]
// (the k-th against the first left out) is below the margin.
std::vector<std::size_t> route_next(const Vec& keys, std::size_t k);
// The same under DeepSeek-V3's group-limited choice (transformers' route_tokens_to_experts): the
// keys split into n_groups equal groups of consecutive experts, each scored by the sum of its two
// largest keys; the k largest keys of the topk_groups best groups (the lower index first on equal
// values) are chosen, the rest masked with -inf. The decision's margin is the smaller of the
// k-th against the first left out and the topk_groups-th group score against the next.
std::vector<std::size_t> route_next_grouped(const Vec& keys, std::size_t k, std::size_t n_groups,
                                            std::size_t topk_groups);
// RECUR_CHECKs that a forward took every decision of the engine's log (when one is set).
void check_routes_consumed();

// Config field as double/int (text_config first, then top level), with a default.
double cfg(const Checkpoint& ck, const std::string& key, double fallback);

}  // namespace recur::model::reference

namespace recur::model::reference {
// Causal GQA softmax attention over whole sequences: q [T][H·hd], k, v [T][Hkv·hd] → [T][H·hd].
// Query head h reads kv head h / (H / Hkv).
std::vector<Vec> causal_attention(const std::vector<Vec>& q, const std::vector<Vec>& k,
                                  const std::vector<Vec>& v, std::int64_t n_heads,
                                  std::int64_t n_kv_heads, std::int64_t head_dim);
// Rounds K and V to bf16 when the engine's KV cache is bf16 (config dtype not float32).
void round_like_kv_cache(const Checkpoint& ck, std::vector<Vec>* k, std::vector<Vec>* v);
// The logits of the final hidden states against the (tied or separate) head.
std::vector<Vec> head_logits(const Checkpoint& ck, const std::vector<Vec>& h, const Tensor& embed);
}  // namespace recur::model::reference
