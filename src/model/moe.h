// Mixture-of-experts feed-forward block (Qwen3-MoE's sparse MLP, docs/model-qwen3-moe.md; also
// Granite 4.0-H's block_sparse_moe and LFM2-MoE's feed_forward): a router picks top_k of n_experts
// SwiGLU experts per token (RouterRule: softmax or sigmoid scores, an optional selection bias,
// DeepSeek-V3's group-limited choice, renormalisation and scaling) and the block returns the
// router-weighted sum of their outputs; Nemotron-H's experts are un-gated ReLU² MLPs. Rows
// routed to one expert run through that expert's matmuls together, so a step reads each selected
// expert's weights once however many rows chose it. Every row's bytes depend on that row alone
// (design invariant 1): the kernels are row-invariant, and a token's sum runs over its own experts
// in ascending expert index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

// How a row's router logits become its experts and their weights.
struct RouterRule {
  enum class Score : std::uint8_t {
    kSoftmax,  // softmax over all experts (Qwen3-MoE; Granite's softmax over the top k logits is
               // this renormalised)
    kSigmoid,  // sigmoid per expert (LFM2-MoE)
    // the top_k raw logits chosen, then the softmax over just them (gpt-oss's router)
    kSoftmaxOfTopK,
  };
  Score score = Score::kSoftmax;
  bool normalize = false;  // weights / (their sum, added in rank order, + norm_eps)
  float norm_eps = 0.0f;   // LFM2-MoE: 1e-6
  float scale = 1.0f;      // routed_scaling_factor, after the normalisation
  // [n_experts] added to the scores for the choice only (LFM2-MoE's expert_bias); the weights are
  // the unbiased scores. nullptr: none.
  const float* selection_bias = nullptr;
  // DeepSeek-V3's group-limited choice (Nemotron-H's n_group / topk_group): the experts split into
  // n_groups equal groups of consecutive indices, each group scored by the sum of its two largest
  // keys (score + selection bias), and only the experts of the topk_groups best groups (the lower
  // index first on equal sums) can be chosen. 1: no grouping.
  std::int64_t n_groups = 1, topk_groups = 1;
};

// Where a layer's MoE tensors are, relative to its prefix ("model.layers.N.").
struct MoeNames {
  std::string module = "mlp.";         // holds switch_mlp.* (MLX) and the names below
  std::string router = "gate.weight";  // [n_experts, d_model]
  std::string selection_bias;          // [n_experts] f32 when not empty (LFM2-MoE)
  std::string proj[3] = {"gate_proj", "up_proj", "down_proj"};  // per-expert Linears
  // Stacked [E, 2 * d_ff, d_model] (gate rows first) and [E, d_model, d_ff] tensors: transformers
  // 5's fused experts, Granite 4.0-H's input_linear / output_linear. Un-gated experts
  // (ExpertAct::kRelu2): fused_gate_up is the stacked up Linears [E, d_ff, d_model].
  std::string fused_gate_up = "experts.gate_up_proj", fused_down = "experts.down_proj";
  bool per_expert = true;   // the checkpoint may hold a tensor per expert instead
  std::string router_bias;  // [n_experts] when not empty (gpt-oss's router.bias)
  // gpt-oss's experts (TensorVisitor::interleaved_experts) with their biases
  // experts.gate_up_proj_bias [E, 2 * d_ff] (gate even) and experts.down_proj_bias [E, d_model].
  bool interleaved = false;
  // What MLX's stacked switch_mlp names each Linear (mlx-lm's nemotron_h.py: fc1 / fc2).
  std::string mlx_proj[3] = {"gate_proj", "up_proj", "down_proj"};
};

// The experts' MLP: SwiGLU down(act(gate(x)) ⊙ up(x)), or Nemotron-H's un-gated ReLU²
// down(relu(up(x))²), which has no gate Linear (MoeW::gate stays empty views).
enum class ExpertAct : std::uint8_t { kSwiglu, kRelu2 };

// gpt-oss's activation: g = min(g, limit), u = clamp(u, -limit, limit), (u + 1) · g · σ(alpha · g).
// alpha 0: the plain SwiGLU.
struct ClampedSwiglu {
  float alpha = 0.0f, limit = 0.0f;
};

struct MoeW {
  kernels::WeightView router;                 // [n_experts, d_model]
  std::vector<kernels::WeightView> gate, up;  // per expert [d_ff, d_model]
  std::vector<kernels::WeightView> down;      // per expert [d_model, d_ff]
  std::int64_t n_experts = 0, top_k = 0, d_ff = 0;
  bool norm_topk_prob = false;
  RouterRule::Score score = RouterRule::Score::kSoftmax;
  float norm_eps = 0.0f, routed_scale = 1.0f;
  std::vector<float> selection_bias;  // empty: none
  MoeNames names;
  ClampedSwiglu clamped;
  ExpertAct act = ExpertAct::kSwiglu;
  std::int64_t n_groups = 1, topk_groups = 1;  // RouterRule's group-limited choice
  // Empty: none. router_bias [n_experts]; gate_bias, up_bias [n_experts, d_ff]; down_bias
  // [n_experts, d_model].
  std::vector<float> router_bias, gate_bias, up_bias, down_bias;
};

// `p` is the layer's prefix ("model.layers.N."): reads the router and the experts' Linears
// (TensorVisitor::expert_matrices: per-expert, fused or MLX's stacked switch_mlp tensors).
void visit_moe(TensorVisitor& v, const std::string& p, std::int64_t d_model, MoeW* w);
// num_experts and num_experts_per_tok read from config c: 1 <= top_k <= n_experts <= 4096 (each
// expert is loaded as its own views: the bound keeps a corrupt config's tensor count in reach).
// `experts_key` is the config's name for the expert count in the error.
Status check_expert_counts(const ConfigJson& c, std::int64_t n_experts, std::int64_t top_k,
                           std::string_view experts_key = "num_experts");
std::int64_t moe_scratch_per_row(const MoeW& w);
void moe_block(ForwardCtx& ctx, const MoeW& w, const float* x, float* out);

// The router's choice for rows of logits [n_rows, n_experts] (f32, overwritten by their softmax):
// experts [n_rows, top_k] in rank order (descending probability; of equal probabilities the lower
// expert index first, as torch.topk on CPU) and their weights [n_rows, top_k], the softmax
// probabilities, divided by their sum (added in rank order) when `normalize`.
void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 bool normalize, std::int32_t* experts, float* weights);
// The same under any rule: scores (softmax or sigmoid, in place of the logits), the top_k of
// score + selection_bias in rank order (the lower index first on equal values; with groups, among
// the kept groups' experts only), their unbiased scores as weights, normalised and scaled as the
// rule says.
void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 const RouterRule& rule, std::int32_t* experts, float* weights);

// Tests: while set, route_top_k appends each row's experts (rank order) to *log, so a reference
// can follow the engine's choice at a router near-tie (tests/model/reference.h). nullptr: off.
void set_route_log(std::vector<std::int32_t>* log);

// What forwards read from and computed with the experts (recur bench's bandwidth bound and
// FLOPs): per MoE layer, the distinct experts the rows chose. Counted only when enabled (the
// engine leaves it off); one process-wide counter, as Model::forward has one caller at a time.
struct ExpertTraffic {
  bool enabled = false;
  std::int64_t expert_reads = 0;  // (layer, expert) pairs read, summed over forwards
  std::int64_t expert_bytes = 0;  // their gate, up and down weight bytes
  double flops = 0;               // 2 x rows x the elements of the experts each row ran through
  void reset() { expert_reads = expert_bytes = 0, flops = 0; }
};
ExpertTraffic& expert_traffic();

}  // namespace recur::model
