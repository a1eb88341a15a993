// Qwen3-MoE (Qwen3MoeForCausalLM, docs/model-qwen3-moe.md): Qwen3's layer (plain RMSNorm, GQA
// attention with q/k norm and full RoPE) whose MLP is a sparse mixture of experts (model/moe.h) on
// the layers decoder_sparse_step and mlp_only_layers select, a dense SwiGLU of intermediate_size on
// the others; final plain RMSNorm; tied or separate head.
#include <algorithm>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Qwen3MoeConfig {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0;
  AttentionGeometry attn;
  std::int64_t vocab_size = 0, n_experts = 0, top_k = 0, moe_d_ff = 0, sparse_step = 1;
  std::vector<std::int64_t> mlp_only_layers;
  float eps = 1e-6f, rope_theta = 1e6f;
  bool tied = false, norm_topk_prob = false, attention_bias = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;

  // Qwen3MoeDecoderLayer: experts unless the layer is listed in mlp_only_layers, or experts are
  // off, or (layer + 1) is not a multiple of decoder_sparse_step.
  bool sparse(std::int64_t layer) const {
    return n_experts > 0 && (layer + 1) % sparse_step == 0 &&
           std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) ==
               mlp_only_layers.end();
  }
};

Result<Qwen3MoeConfig> parse_config(const ConfigJson& c) {
  Qwen3MoeConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  // transformers' attribute_map also accepts Mixtral's spelling.
  RECUR_ASSIGN_OR_RETURN(std::int64_t local, c.get_int("num_local_experts", 0));
  RECUR_ASSIGN_OR_RETURN(q.n_experts, c.get_int("num_experts", local));
  RECUR_ASSIGN_OR_RETURN(q.top_k, c.get_int("num_experts_per_tok"));
  RECUR_ASSIGN_OR_RETURN(q.moe_d_ff, c.get_int("moe_intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.sparse_step, c.get_int("decoder_sparse_step", 1));
  RECUR_ASSIGN_OR_RETURN(q.mlp_only_layers, c.get_int_list("mlp_only_layers"));
  RECUR_ASSIGN_OR_RETURN(q.norm_topk_prob, c.get_bool("norm_topk_prob", false));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(bool sliding, c.get_bool("use_sliding_window", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, 1e6));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  if (sliding) {
    return Error(StatusCode::kUnimplemented,
                 "{}: use_sliding_window true is not supported for qwen3_moe", c.file());
  }
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.d_ff, "intermediate_size"},
                                             {q.vocab_size, "vocab_size"},
                                             {q.moe_d_ff, "moe_intermediate_size"},
                                             {q.sparse_step, "decoder_sparse_step"}}));
  // Experts are loaded as one view each: 4096 bounds the tensor count of a corrupt config.
  constexpr std::int64_t kMaxExperts = 4096;
  if (q.n_experts < 0 || q.n_experts > kMaxExperts ||
      (q.n_experts > 0 && (q.top_k < 1 || q.top_k > q.n_experts))) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: num_experts {} and num_experts_per_tok {}: need 0 <= num_experts <= {} and "
                 "1 <= num_experts_per_tok <= num_experts",
                 c.file(), q.n_experts, q.top_k, kMaxExperts);
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size, q.moe_d_ff}, {}));
  RECUR_ASSIGN_OR_RETURN(q.attn, read_attention_geometry(c, q.d_model, q.n_layers));
  return q;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3_moe(const ConfigJson& c,
                                                      const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Qwen3MoeConfig q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    AttentionW attn = gqa_attention(q.attn, q.rope_theta, q.kv_dtype, q.eps);
    attn.bias = q.attention_bias;
    std::unique_ptr<Mixer> ffn;
    if (q.sparse(i)) {
      ffn = std::make_unique<MoeMixer>(MoeW{.n_experts = q.n_experts,
                                            .top_k = q.top_k,
                                            .d_ff = q.moe_d_ff,
                                            .norm_topk_prob = q.norm_topk_prob});
    } else {
      ffn = std::make_unique<GluMlpMixer>(MlpW{}, q.d_ff);
    }
    s.layers.push_back(mixer_ffn_layer(
        {.eps = q.eps}, std::make_unique<AttentionMixer>(std::move(attn)), std::move(ffn)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
