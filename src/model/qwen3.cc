// Qwen3 dense (spec section 1): every layer is plain-RMSNorm → GQA attention with q/k norm and full
// RoPE → residual → plain-RMSNorm → SwiGLU → residual (spec 1.3); final plain RMSNorm; tied or
// separate head.
#include <algorithm>

#include "model/stack.h"

namespace recur::model {

namespace {

struct Qwen3Config {
  std::int64_t d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0;
  std::int64_t vocab_size = 0;
  float eps = 1e-6f, rope_theta = 1e6f;
  bool tied = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

Result<Qwen3Config> parse_config(const ConfigJson& c) {
  Qwen3Config q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", q.n_heads));
  // Qwen3 head_dim is explicit (128 != 1024/16); fall back to the classic ratio if absent.
  RECUR_ASSIGN_OR_RETURN(q.head_dim,
                         c.get_int("head_dim", q.n_heads > 0 ? q.d_model / q.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 1e6));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  for (auto [v, name] : {std::pair{q.d_model, "hidden_size"},
                         {q.n_layers, "num_hidden_layers"},
                         {q.n_heads, "num_attention_heads"},
                         {q.n_kv_heads, "num_key_value_heads"},
                         {q.head_dim, "head_dim"},
                         {q.d_ff, "intermediate_size"},
                         {q.vocab_size, "vocab_size"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size},
                                          {q.n_heads, q.n_kv_heads, q.head_dim}));
  if (q.n_heads % q.n_kv_heads != 0 || q.head_dim % 2 != 0 || q.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), q.n_heads, q.n_kv_heads, q.head_dim);
  }
  return q;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Qwen3Config q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    AttentionW attn{.q_norm = {.eps = q.eps},
                    .k_norm = {.eps = q.eps},
                    .n_heads = q.n_heads,
                    .n_kv_heads = q.n_kv_heads,
                    .head_dim = q.head_dim,
                    .rotary_dim = q.head_dim,
                    .rope_theta = q.rope_theta,
                    .kv_dtype = q.kv_dtype};
    s.layers.push_back(mixer_ffn_layer({.eps = q.eps}, std::make_unique<AttentionMixer>(attn),
                                       std::make_unique<GluMlpMixer>(MlpW{}, q.d_ff)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
