// The shared expert of Qwen3-Next and Qwen3.5-MoE (Qwen3NextSparseMoeBlock): beside the routed
// experts of model/moe.h, every token also runs one SwiGLU of shared_expert_intermediate_size,
// scaled by a per-token sigmoid gate: y += sigmoid(x · g) · SwiGLU_shared(x), with g
// mlp.shared_expert_gate.weight [1, d_model]. Row-invariant like the rest of the layer.
#pragma once

#include <cstdint>
#include <string>

#include "model/blocks.h"

namespace recur::model {

struct SharedExpertW {
  MlpW mlp;                  // mlp.shared_expert.{gate,up,down}_proj
  kernels::WeightView gate;  // mlp.shared_expert_gate.weight [1, d_model]
};

// `p` is the layer's prefix ("model.layers.N.").
void visit_shared_expert(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                         std::int64_t d_ff, SharedExpertW* w);
std::int64_t shared_expert_scratch_per_row(const SharedExpertW& w);
// out [n_rows, d_model] += sigmoid(x · g) ⊙ SwiGLU_shared(x), per row.
void add_shared_expert(ForwardCtx& ctx, const SharedExpertW& w, const float* x, float* out);

}  // namespace recur::model
