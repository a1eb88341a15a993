#include "model/qwen3_5_hybrid.h"

#include <algorithm>
#include <utility>

#include "model/config_readers.h"

namespace recur::model {

namespace {

Result<std::vector<bool>> parse_schedule(const ConfigJson& c, std::int64_t n_layers) {
  std::vector<bool> out;
  if (c.has("layer_types")) {
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings("layer_types"));
    if (static_cast<std::int64_t>(types.size()) != n_layers) {
      return Error(StatusCode::kInvalidArgument, "{}: layer_types has {} entries for {} layers",
                   c.file(), types.size(), n_layers);
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (types[i] != "full_attention" && types[i] != "linear_attention") {
        return Error(StatusCode::kInvalidArgument,
                     "{}: layer_types[{}] '{}' is not one of "
                     "full_attention, linear_attention",
                     c.file(), i, types[i]);
      }
      out.push_back(types[i] == "full_attention");
    }
    return out;
  }
  RECUR_ASSIGN_OR_RETURN(std::int64_t interval, c.get_int("full_attention_interval", 4));
  if (interval <= 0) {
    return Error(StatusCode::kInvalidArgument, "{}: full_attention_interval must be positive",
                 c.file());
  }
  for (std::int64_t i = 0; i < n_layers; ++i) out.push_back((i + 1) % interval == 0);
  return out;
}

NormW zero_centred(float eps) { return {.eps = eps, .form = NormForm::kZeroCentred}; }

}  // namespace

Result<HybridConfig> parse_hybrid_config(const ConfigJson& c) {
  HybridConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", q.n_heads));
  RECUR_ASSIGN_OR_RETURN(q.head_dim,
                         c.get_int("head_dim", q.n_heads > 0 ? q.d_model / q.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(q.lin_k_heads, c.get_int("linear_num_key_heads"));
  RECUR_ASSIGN_OR_RETURN(q.lin_v_heads, c.get_int("linear_num_value_heads"));
  RECUR_ASSIGN_OR_RETURN(q.lin_k_dim, c.get_int("linear_key_head_dim"));
  RECUR_ASSIGN_OR_RETURN(q.lin_v_dim, c.get_int("linear_value_head_dim"));
  RECUR_ASSIGN_OR_RETURN(q.conv_kernel, c.get_int("linear_conv_kernel_dim", 4));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, 1e7));
  // HF uses 0.25 when the factor is in neither place (spec 2.1).
  RECUR_ASSIGN_OR_RETURN(double f_top, c.get_float("partial_rotary_factor", 0.25));
  RECUR_ASSIGN_OR_RETURN(double factor,
                         c.get_float("rope_parameters.partial_rotary_factor", f_top));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.vocab_size, "vocab_size"},
                                             {q.n_heads, "num_attention_heads"},
                                             {q.n_kv_heads, "num_key_value_heads"},
                                             {q.head_dim, "head_dim"},
                                             {q.lin_k_heads, "linear_num_key_heads"},
                                             {q.lin_v_heads, "linear_num_value_heads"},
                                             {q.lin_k_dim, "linear_key_head_dim"},
                                             {q.lin_v_dim, "linear_value_head_dim"},
                                             {q.conv_kernel, "linear_conv_kernel_dim"}}));
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {q.d_model, q.vocab_size},
                        {q.n_heads, q.n_kv_heads, q.head_dim, q.lin_k_heads, q.lin_v_heads,
                         q.lin_k_dim, q.lin_v_dim, q.conv_kernel}));
  RECUR_ASSIGN_OR_RETURN(q.is_attention, parse_schedule(c, q.n_layers));
  if (!(factor >= 0 && factor <= 1)) {
    return Error(StatusCode::kInvalidArgument, "{}: partial_rotary_factor {} is not in [0, 1]",
                 c.file(), factor);
  }
  q.rotary_dim = static_cast<std::int64_t>(static_cast<double>(q.head_dim) * factor);
  if (q.n_heads % q.n_kv_heads != 0 || q.lin_v_heads % q.lin_k_heads != 0 ||
      q.rotary_dim % 2 != 0 || q.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported geometry (heads {}/{}, head_dim {}, rotary {}, linear heads "
                 "{}/{})",
                 c.file(), q.n_heads, q.n_kv_heads, q.head_dim, q.rotary_dim, q.lin_k_heads,
                 q.lin_v_heads);
  }
  return q;
}

// Spec 2.4 / 2.5 / 2.7: h += mixer(zc_norm(h)); h += mlp(zc_norm(h)). Unused tensors
// (model.visual.*, mtp.*) are never visited.
std::unique_ptr<FamilyModel> make_hybrid(
    const HybridConfig& c, const std::string& prefix, bool interleaved_gdn,
    const std::function<std::unique_ptr<Mixer>(std::int64_t)>& ffn) {
  StackSpec s{.d_model = c.d_model,
              .vocab_size = c.vocab_size,
              .prefix = prefix,
              .final_norm = zero_centred(c.eps),
              .tied = c.tied};
  for (std::int64_t i = 0; i < c.n_layers; ++i) {
    std::unique_ptr<Mixer> mixer;
    if (c.is_attention[static_cast<std::size_t>(i)]) {
      mixer = std::make_unique<AttentionMixer>(AttentionW{.q_norm = zero_centred(c.eps),
                                                          .k_norm = zero_centred(c.eps),
                                                          .n_heads = c.n_heads,
                                                          .n_kv_heads = c.n_kv_heads,
                                                          .head_dim = c.head_dim,
                                                          .rotary_dim = c.rotary_dim,
                                                          .rope_theta = c.rope_theta,
                                                          .output_gate = true,
                                                          .kv_dtype = c.kv_dtype});
    } else {
      mixer = std::make_unique<GatedDeltaMixer>(GatedDeltaW{.norm = {.eps = c.eps},
                                                            .interleaved = interleaved_gdn,
                                                            .n_k_heads = c.lin_k_heads,
                                                            .n_v_heads = c.lin_v_heads,
                                                            .k_dim = c.lin_k_dim,
                                                            .v_dim = c.lin_v_dim,
                                                            .conv_kernel = c.conv_kernel});
    }
    s.layers.push_back(mixer_ffn_layer(zero_centred(c.eps), std::move(mixer), ffn(i)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
