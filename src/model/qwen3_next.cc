// Qwen3-Next (qwen3_next, spec section 3) and Qwen3.5-MoE (qwen3_5_moe, Qwen3.5-35B-A3B and its
// siblings; docs/model-qwen3-next.md): the hybrid layer of model/qwen3_5_hybrid.h whose MLP is a
// routed mixture of experts (model/moe.h) plus a sigmoid-gated shared expert (model/moe_shared.h).
// They differ in three places: Qwen3-Next stores the GDN input projections interleaved per key
// head (in_proj_qkvz, in_proj_ba), reads norm_topk_prob, decoder_sparse_step and mlp_only_layers
// (dense SwiGLU layers of intermediate_size), and is a text-only model.* checkpoint; Qwen3.5-MoE
// has in_proj_qkv / z / b / a, always renormalises the top-k weights (Qwen3_5MoeTopKRouter has no
// switch), puts experts on every layer, and nests its config in text_config under the
// model.language_model. prefix (both resolved in registry.cc).
#include <algorithm>
#include <utility>

#include "model/config_readers.h"
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
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.moe_d_ff, "moe_intermediate_size"},
                                             {q.shared_d_ff, "shared_expert_intermediate_size"},
                                             {q.sparse_step, "decoder_sparse_step"}}));
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

Result<std::unique_ptr<FamilyModel>> create(const ConfigJson& c, const std::string& prefix,
                                            Variant variant) {
  RECUR_ASSIGN_OR_RETURN(HybridConfig h, parse_hybrid_config(c));
  RECUR_ASSIGN_OR_RETURN(MoeConfig q, parse_moe_config(c, variant, h.n_layers));
  // y = routed experts(x) + gated shared expert(x), or a dense SwiGLU.
  return make_hybrid(h, prefix, /*interleaved_gdn=*/variant == Variant::kQwen3Next,
                     [&](std::int64_t i) -> std::unique_ptr<Mixer> {
                       if (!q.sparse(i)) return std::make_unique<GluMlpMixer>(MlpW{}, q.d_ff);
                       return std::make_unique<MoeMixer>(MoeW{.n_experts = q.n_experts,
                                                              .top_k = q.top_k,
                                                              .d_ff = q.moe_d_ff,
                                                              .norm_topk_prob = q.norm_topk_prob},
                                                         q.shared_d_ff);
                     });
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
