// Qwen3.5 small dense hybrid (spec section 2): the hybrid layer of model/qwen3_5_hybrid.h with a
// SwiGLU MLP of intermediate_size on every layer.
#include "model/config_readers.h"
#include "model/qwen3_5_hybrid.h"

namespace recur::model {

Result<std::unique_ptr<FamilyModel>> create_qwen3_5(const ConfigJson& c,
                                                    const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(HybridConfig h, parse_hybrid_config(c));
  RECUR_ASSIGN_OR_RETURN(std::int64_t d_ff, c.get_int("intermediate_size"));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{d_ff, "intermediate_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, h.n_layers, {d_ff}, {}));
  return make_hybrid(h, prefix, /*interleaved_gdn=*/false,
                     [&](std::int64_t) { return std::make_unique<GluMlpMixer>(MlpW{}, d_ff); });
}

}  // namespace recur::model
