// The gated shared expert, added after the routed experts' sum as HF adds it
// (expert_output += shared_expert_output).
#include "model/moe_shared.h"

#include <cmath>

#include "util/stage_times.h"

namespace recur::model {

namespace k = recur::kernels;

void visit_shared_expert(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                         std::int64_t d_ff, SharedExpertW* w) {
  w->mlp.module = "mlp.shared_expert.";
  visit_mlp(v, p, d_model, d_ff, &w->mlp);
  v.matrix(p + "mlp.shared_expert_gate.weight", 1, d_model, &w->gate);
}

// The shared SwiGLU's output and the gate logit per row, then the MLP's own scratch.
std::int64_t shared_expert_scratch_per_row(const SharedExpertW& w) {
  return w.gate.cols + 1 + mlp_scratch_per_row(w.mlp);
}

void add_shared_expert(ForwardCtx& ctx, const SharedExpertW& w, const float* x, float* out) {
  const stages::Scope stage("shared_expert");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d = w.gate.cols;
  float* y = ctx.scratch->take(n * d);
  float* logit = ctx.scratch->take(n);
  k::matmul(*ctx.pool, x, n, w.gate, logit);
  swiglu_mlp(ctx, w.mlp, x, y);
  for (std::int64_t r = 0; r < n; ++r) {
    k::add_scaled(out + r * d, y + r * d, 1.0f / (1.0f + std::exp(-logit[r])), d);
  }
}

}  // namespace recur::model
