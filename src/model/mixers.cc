#include "model/mixers.h"

#include <algorithm>

#include "util/stage_times.h"

namespace recur::model {

void GluMlpMixer::forward(ForwardCtx& ctx, const float* x, float* out) const {
  if (act_ == Act::kSilu) {
    swiglu_mlp(ctx, w_, x, out);
  } else {
    geglu_mlp(ctx, w_, x, out);
  }
}

void MoeMixer::visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) {
  visit_moe(v, p, d_model, &w_);
  if (shared_d_ff_ > 0) visit_shared_expert(v, p, d_model, shared_d_ff_, &shared_);
  if (relu2_shared_.d_ff > 0) {
    visit_relu2_mlp(v, p + relu2_shared_.module, d_model, relu2_shared_.d_ff, &relu2_shared_w_);
  }
}

std::int64_t MoeMixer::scratch_per_row() const {
  const std::int64_t routed = moe_scratch_per_row(w_);
  if (relu2_shared_.d_ff > 0) {
    // The shared expert's output row, then its own scratch.
    return std::max(routed, w_.router.cols + relu2_mlp_scratch_per_row(relu2_shared_w_));
  }
  return shared_d_ff_ > 0 ? std::max(routed, shared_expert_scratch_per_row(shared_)) : routed;
}

void MoeMixer::forward(ForwardCtx& ctx, const float* x, float* out) const {
  moe_block(ctx, w_, x, out);
  if (shared_d_ff_ > 0) add_shared_expert(ctx, shared_, x, out);
  if (relu2_shared_.d_ff > 0) {
    // NemotronHMoE: routed sum + shared_experts(x), unweighted.
    const stages::Scope stage("shared_expert");
    ScratchFrame frame(ctx.scratch);
    const std::int64_t n = ctx.n_rows * w_.router.cols;
    float* y = ctx.scratch->take(n);
    relu2_mlp(ctx, relu2_shared_w_, x, y);
    kernels::add(out, y, n);
  }
}

}  // namespace recur::model
