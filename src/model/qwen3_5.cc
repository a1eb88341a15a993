// Qwen3.5 small dense hybrid (spec section 2): the hybrid layer of model/qwen3_5_hybrid.h with a
// SwiGLU MLP of intermediate_size on every layer.
#include <utility>

#include "model/qwen3_5_hybrid.h"

namespace recur::model {

namespace {

class Qwen35 final : public Qwen35Hybrid {
 public:
  Qwen35(const HybridConfig& c, std::string prefix, std::int64_t d_ff)
      : Qwen35Hybrid(c, std::move(prefix), /*interleaved_gdn=*/false),
        d_ff_(d_ff),
        mlp_(static_cast<std::size_t>(c.n_layers)) {}

 private:
  void visit_layer_mlp(TensorVisitor& v, const std::string& p, std::size_t layer) override {
    visit_mlp(v, p, d_model(), d_ff_, &mlp_[layer]);
  }
  std::int64_t layer_mlp_scratch_per_row(std::size_t layer) const override {
    return mlp_scratch_per_row(mlp_[layer]);
  }
  void layer_mlp(ForwardCtx& ctx, std::size_t layer, const float* x, float* y) const override {
    swiglu_mlp(ctx, mlp_[layer], x, y);
  }

  std::int64_t d_ff_;
  std::vector<MlpW> mlp_;  // per layer
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3_5(const ConfigJson& c,
                                                    const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(HybridConfig h, parse_hybrid_config(c));
  RECUR_ASSIGN_OR_RETURN(std::int64_t d_ff, c.get_int("intermediate_size"));
  if (d_ff <= 0) {
    return Error(StatusCode::kInvalidArgument, "{}: intermediate_size must be positive", c.file());
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, h.n_layers, {d_ff}, {}));
  return std::unique_ptr<FamilyModel>(std::make_unique<Qwen35>(h, prefix, d_ff));
}

}  // namespace recur::model
