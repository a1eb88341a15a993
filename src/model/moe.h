// Mixture-of-experts feed-forward block (Qwen3-MoE's sparse MLP, docs/model.md): a softmax
// router picks top_k of n_experts SwiGLU experts per token and the block returns the
// router-weighted sum of their outputs. Rows routed to one expert run through that expert's
// matmuls together, so a step reads each selected expert's weights once however many rows chose
// it. Every row's bytes depend on that row alone (design invariant 1): the kernels are
// row-invariant, and a token's sum runs over its own experts in ascending expert index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

struct MoeW {
  kernels::WeightView router;                 // mlp.gate.weight [n_experts, d_model]
  std::vector<kernels::WeightView> gate, up;  // per expert [d_ff, d_model]
  std::vector<kernels::WeightView> down;      // per expert [d_model, d_ff]
  std::int64_t n_experts = 0, top_k = 0, d_ff = 0;
  bool norm_topk_prob = false;
};

// `p` is the layer's prefix ("model.layers.N."): reads p + "mlp.gate.weight" and the experts'
// Linears (TensorVisitor::expert_matrices: per-expert or MLX's stacked switch_mlp tensors).
void visit_moe(TensorVisitor& v, const std::string& p, std::int64_t d_model, MoeW* w);
std::int64_t moe_scratch_per_row(const MoeW& w);
void moe_block(ForwardCtx& ctx, const MoeW& w, const float* x, float* out);

// The router's choice for rows of logits [n_rows, n_experts] (f32, overwritten by their softmax):
// experts [n_rows, top_k] in rank order (descending probability; of equal probabilities the lower
// expert index first, as torch.topk on CPU) and their weights [n_rows, top_k], the softmax
// probabilities, divided by their sum (added in rank order) when `normalize`.
void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 bool normalize, std::int32_t* experts, float* weights);

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
