// Qwen3 dense (spec section 1): every layer is plain-RMSNorm → GQA attention with q/k norm and full
// RoPE → residual → plain-RMSNorm → SwiGLU → residual (spec 1.3); final plain RMSNorm; tied or
// separate head.
#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Qwen3Config {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0;
  AttentionGeometry attn;  // Qwen3's head_dim is explicit (128 != 1024 / 16)
  float eps = 1e-6f, rope_theta = 1e6f;
  bool tied = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

Result<Qwen3Config> parse_config(const ConfigJson& c) {
  Qwen3Config q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, 1e6));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.d_ff, "intermediate_size"},
                                             {q.vocab_size, "vocab_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  RECUR_ASSIGN_OR_RETURN(q.attn, read_attention_geometry(c, q.d_model, q.n_layers));
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
    const AttentionW attn = gqa_attention(q.attn, q.rope_theta, q.kv_dtype, q.eps);
    s.layers.push_back(mixer_ffn_layer({.eps = q.eps}, std::make_unique<AttentionMixer>(attn),
                                       std::make_unique<GluMlpMixer>(MlpW{}, q.d_ff)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
