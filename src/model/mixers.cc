#include "model/mixers.h"

#include <algorithm>

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
}

std::int64_t MoeMixer::scratch_per_row() const {
  const std::int64_t routed = moe_scratch_per_row(w_);
  return shared_d_ff_ > 0 ? std::max(routed, shared_expert_scratch_per_row(shared_)) : routed;
}

void MoeMixer::forward(ForwardCtx& ctx, const float* x, float* out) const {
  moe_block(ctx, w_, x, out);
  if (shared_d_ff_ > 0) add_shared_expert(ctx, shared_, x, out);
}

}  // namespace recur::model
