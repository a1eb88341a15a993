// Feed-forward blocks and residual helpers beyond blocks.h's SwiGLU/GeGLU, for the hybrids of
// small machines: Granite 4.0-H's SwiGLU with one fused [gate | up] matrix
// (shared_mlp.input_linear) and its muP residual multiplier, Nemotron-H's un-gated ReLU² MLP. Same
// contract as blocks.h: x [n_rows, d_model] in, [n_rows, d_model] out, row-wise only, so a row's
// bytes never depend on the batch.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

// down(silu(g) ⊙ u) with [g | u] = gate_up(x): gate_up is [2·d_ff, d_model], the first d_ff rows
// the gate (HF GraniteMoeHybridMLP: chunk(2) of input_linear's output).
struct FusedGluW {
  kernels::WeightView gate_up, down;
  std::int64_t d_ff = 0;
};
// `gate_up` and `down` are full tensor names ([2·d_ff, d_model] and [d_model, d_ff]).
void visit_fused_glu(TensorVisitor& v, const std::string& gate_up, const std::string& down,
                     std::int64_t d_model, FusedGluW* w);
std::int64_t fused_glu_scratch_per_row(const FusedGluW& w);
void fused_swiglu_mlp(ForwardCtx& ctx, const FusedGluW& w, const float* x, float* out);

// down(relu(up(x))²): Nemotron-H's MLP layer ("-" in hybrid_override_pattern, mlp_hidden_act
// relu2), no gate and no bias.
struct Relu2MlpW {
  kernels::WeightView up, down;
};
// Tensors `<p>up_proj.weight` [d_ff, d_model] and `<p>down_proj.weight` [d_model, d_ff].
void visit_relu2_mlp(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                     std::int64_t d_ff, Relu2MlpW* w);
std::int64_t relu2_mlp_scratch_per_row(const Relu2MlpW& w);
void relu2_mlp(ForwardCtx& ctx, const Relu2MlpW& w, const float* x, float* out);

// h ← h + scale · y over n floats (Granite's residual_multiplier; scale 1 is a plain add).
void add_scaled(float* h, const float* y, float scale, std::int64_t n);

}  // namespace recur::model
