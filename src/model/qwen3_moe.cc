// Qwen3-MoE (Qwen3MoeForCausalLM, docs/model.md): Qwen3's layer (plain RMSNorm, GQA attention
// with q/k norm and full RoPE) whose MLP is a sparse mixture of experts (model/moe.h) on the
// layers decoder_sparse_step and mlp_only_layers select, a dense SwiGLU of intermediate_size on
// the others; final plain RMSNorm; tied or separate head.
#include <algorithm>

#include "model/blocks.h"
#include "model/moe.h"

namespace recur::model {

namespace {

struct Qwen3MoeConfig {
  std::int64_t d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0;
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
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", q.n_heads));
  RECUR_ASSIGN_OR_RETURN(q.head_dim,
                         c.get_int("head_dim", q.n_heads > 0 ? q.d_model / q.n_heads : 0));
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
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 1e6));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  if (sliding) {
    return Error(StatusCode::kUnimplemented,
                 "{}: use_sliding_window true is not supported for qwen3_moe", c.file());
  }
  for (auto [v, name] : {std::pair{q.d_model, "hidden_size"},
                         {q.n_layers, "num_hidden_layers"},
                         {q.n_heads, "num_attention_heads"},
                         {q.n_kv_heads, "num_key_value_heads"},
                         {q.head_dim, "head_dim"},
                         {q.d_ff, "intermediate_size"},
                         {q.vocab_size, "vocab_size"},
                         {q.moe_d_ff, "moe_intermediate_size"},
                         {q.sparse_step, "decoder_sparse_step"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  // Experts are loaded as one view each: 4096 bounds the tensor count of a corrupt config.
  constexpr std::int64_t kMaxExperts = 4096;
  if (q.n_experts < 0 || q.n_experts > kMaxExperts ||
      (q.n_experts > 0 && (q.top_k < 1 || q.top_k > q.n_experts))) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: num_experts {} and num_experts_per_tok {}: need 0 <= num_experts <= {} and "
                 "1 <= num_experts_per_tok <= num_experts",
                 c.file(), q.n_experts, q.top_k, kMaxExperts);
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers,
                                          {q.d_model, q.d_ff, q.vocab_size, q.moe_d_ff},
                                          {q.n_heads, q.n_kv_heads, q.head_dim}));
  if (q.n_heads % q.n_kv_heads != 0 || q.head_dim % 2 != 0 || q.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), q.n_heads, q.n_kv_heads, q.head_dim);
  }
  return q;
}

struct Qwen3MoeLayer {
  NormW input_norm, post_norm;
  AttentionW attn;
  bool sparse = false;
  MoeW moe;  // sparse layers
  MlpW mlp;  // dense layers
};

class Qwen3Moe final : public FamilyModel {
 public:
  Qwen3Moe(const Qwen3MoeConfig& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Qwen3MoeLayer& l = layers_[i];
      l.input_norm.eps = l.post_norm.eps = c.eps;
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = c.rope_theta,
                .bias = c.attention_bias,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.attn.q_norm.eps = l.attn.k_norm.eps = c.eps;
      l.sparse = c.sparse(static_cast<std::int64_t>(i));
      l.moe = {.n_experts = c.n_experts,
               .top_k = c.top_k,
               .d_ff = c.moe_d_ff,
               .norm_topk_prob = c.norm_topk_prob};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) s.layers.push_back(attention_state(l.attn));
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Qwen3MoeLayer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      visit_attention(v, p, c_.d_model, &l.attn);
      visit_norm(v, p + "post_attention_layernorm.weight", c_.d_model, &l.post_norm);
      if (l.sparse) {
        visit_moe(v, p, c_.d_model, &l.moe);
      } else {
        visit_mlp(v, p, c_.d_model, c_.d_ff, &l.mlp);
      }
    }
    visit_norm(v, p_ + "norm.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t ff = 0;
    for (const Qwen3MoeLayer& l : layers_) {
      ff = std::max(ff, l.sparse ? moe_scratch_per_row(l.moe) : mlp_scratch_per_row(l.mlp));
    }
    return 2 * c_.d_model + std::max(attention_scratch_per_row(layers_.front().attn), ff);
  }

  // Per layer: h += attn(norm(h)); h += (moe or mlp)(norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const Qwen3MoeLayer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      attention_block(ctx, l.attn, x, y);
      kernels::add(h, y, n * d);
      apply_norm(l.post_norm, h, x, n, d);
      if (l.sparse) {
        moe_block(ctx, l.moe, x, y);
      } else {
        swiglu_mlp(ctx, l.mlp, x, y);
      }
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  Qwen3MoeConfig c_;
  std::string p_;
  std::vector<Qwen3MoeLayer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3_moe(const ConfigJson& c,
                                                      const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Qwen3MoeConfig q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Qwen3Moe>(q, prefix));
}

}  // namespace recur::model
