// Qwen3-Next (qwen3_next, spec section 3) and Qwen3.5-MoE (qwen3_5_moe, Qwen3.5-35B-A3B and its
// siblings; docs/model.md): the hybrid layer of model/qwen3_5_hybrid.h whose MLP is a routed
// mixture of experts (model/moe.h) plus a sigmoid-gated shared expert (model/moe_shared.h).
// They differ in three places: Qwen3-Next stores the GDN input projections interleaved per key
// head (in_proj_qkvz, in_proj_ba), reads norm_topk_prob, decoder_sparse_step and mlp_only_layers
// (dense SwiGLU layers of intermediate_size), and is a text-only model.* checkpoint; Qwen3.5-MoE
// has in_proj_qkv / z / b / a, always renormalises the top-k weights (Qwen3_5MoeTopKRouter has no
// switch), puts experts on every layer, and nests its config in text_config under the
// model.language_model. prefix (both resolved in registry.cc).
#include <algorithm>
#include <utility>

#include "model/moe.h"
#include "model/moe_shared.h"
#include "model/qwen3_5_hybrid.h"

namespace recur::model {

namespace {

enum class Variant : std::uint8_t { kQwen3Next, kQwen3_5Moe };

// The MLP's fields; the rest is HybridConfig.
struct MoeConfig {
  std::int64_t n_experts = 0, top_k = 0, moe_d_ff = 0, shared_d_ff = 0, sparse_step = 1;
  std::int64_t d_ff = 0;  // dense layers only
  std::vector<std::int64_t> mlp_only_layers;
  bool norm_topk_prob = true;

  // Qwen3NextDecoderLayer: experts unless listed in mlp_only_layers or off the sparse step.
  bool sparse(std::int64_t layer) const {
    return (layer + 1) % sparse_step == 0 &&
           std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) ==
               mlp_only_layers.end();
  }
};

Result<MoeConfig> parse_moe_config(const ConfigJson& c, Variant variant, std::int64_t n_layers) {
  MoeConfig q;
  RECUR_ASSIGN_OR_RETURN(q.n_experts, c.get_int("num_experts"));
  RECUR_ASSIGN_OR_RETURN(q.top_k, c.get_int("num_experts_per_tok"));
  RECUR_ASSIGN_OR_RETURN(q.moe_d_ff, c.get_int("moe_intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.shared_d_ff, c.get_int("shared_expert_intermediate_size"));
  if (variant == Variant::kQwen3Next) {
    RECUR_ASSIGN_OR_RETURN(q.norm_topk_prob, c.get_bool("norm_topk_prob", true));
    RECUR_ASSIGN_OR_RETURN(q.sparse_step, c.get_int("decoder_sparse_step", 1));
    RECUR_ASSIGN_OR_RETURN(q.mlp_only_layers, c.get_int_list("mlp_only_layers"));
  }
  for (auto [v, name] : {std::pair{q.moe_d_ff, "moe_intermediate_size"},
                         {q.shared_d_ff, "shared_expert_intermediate_size"},
                         {q.sparse_step, "decoder_sparse_step"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(check_expert_counts(c, q.n_experts, q.top_k));
  bool any_dense = false;
  for (std::int64_t i = 0; i < n_layers; ++i) any_dense = any_dense || !q.sparse(i);
  if (any_dense) {  // intermediate_size is read only when a layer is dense (it is 5120, unused,
                    // in Qwen3-Next-80B-A3B, and absent from Qwen3.5-MoE configs)
    RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
    if (q.d_ff <= 0) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: intermediate_size must be positive (mlp_only_layers / "
                   "decoder_sparse_step make some layers dense)",
                   c.file());
    }
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, n_layers, {q.d_ff, q.moe_d_ff, q.shared_d_ff}, {}));
  return q;
}

struct MoeLayerW {
  bool sparse = true;
  MoeW moe;              // sparse layers: routed experts ...
  SharedExpertW shared;  // ... and the gated shared expert
  MlpW mlp;              // dense layers (Qwen3-Next's mlp_only_layers)
};

class Qwen3Next final : public Qwen35Hybrid {
 public:
  Qwen3Next(const HybridConfig& h, const MoeConfig& c, std::string prefix, Variant variant)
      : Qwen35Hybrid(h, std::move(prefix), /*interleaved_gdn=*/variant == Variant::kQwen3Next),
        moe_(c),
        layers_(static_cast<std::size_t>(h.n_layers)) {
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      layers_[i].sparse = c.sparse(static_cast<std::int64_t>(i));
      layers_[i].moe = {.n_experts = c.n_experts,
                        .top_k = c.top_k,
                        .d_ff = c.moe_d_ff,
                        .norm_topk_prob = c.norm_topk_prob};
    }
  }

 private:
  void visit_layer_mlp(TensorVisitor& v, const std::string& p, std::size_t layer) override {
    MoeLayerW& l = layers_[layer];
    if (l.sparse) {
      visit_moe(v, p, d_model(), &l.moe);
      visit_shared_expert(v, p, d_model(), moe_.shared_d_ff, &l.shared);
    } else {
      visit_mlp(v, p, d_model(), moe_.d_ff, &l.mlp);
    }
  }
  std::int64_t layer_mlp_scratch_per_row(std::size_t layer) const override {
    const MoeLayerW& l = layers_[layer];
    return l.sparse ? std::max(moe_scratch_per_row(l.moe), shared_expert_scratch_per_row(l.shared))
                    : mlp_scratch_per_row(l.mlp);
  }
  // y = routed experts(x) + gated shared expert(x), or a dense SwiGLU.
  void layer_mlp(ForwardCtx& ctx, std::size_t layer, const float* x, float* y) const override {
    const MoeLayerW& l = layers_[layer];
    if (l.sparse) {
      moe_block(ctx, l.moe, x, y);
      add_shared_expert(ctx, l.shared, x, y);
    } else {
      swiglu_mlp(ctx, l.mlp, x, y);
    }
  }

  MoeConfig moe_;
  std::vector<MoeLayerW> layers_;
};

Result<std::unique_ptr<FamilyModel>> create(const ConfigJson& c, const std::string& prefix,
                                            Variant variant) {
  RECUR_ASSIGN_OR_RETURN(HybridConfig h, parse_hybrid_config(c));
  RECUR_ASSIGN_OR_RETURN(MoeConfig q, parse_moe_config(c, variant, h.n_layers));
  return std::unique_ptr<FamilyModel>(std::make_unique<Qwen3Next>(h, q, prefix, variant));
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3_next(const ConfigJson& c,
                                                       const std::string& prefix) {
  return create(c, prefix, Variant::kQwen3Next);
}

Result<std::unique_ptr<FamilyModel>> create_qwen3_5_moe(const ConfigJson& c,
                                                        const std::string& prefix) {
  return create(c, prefix, Variant::kQwen3_5Moe);
}

}  // namespace recur::model
