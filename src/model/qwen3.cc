// Qwen3 dense (spec section 1): every layer is plain-RMSNorm → GQA attention with q/k norm and full
// RoPE → residual → plain-RMSNorm → SwiGLU → residual; final plain RMSNorm; tied or separate head.
#include <algorithm>

#include "model/blocks.h"

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

struct Qwen3Layer {
  NormW input_norm, post_norm;
  AttentionW attn;
  MlpW mlp;
};

class Qwen3 final : public FamilyModel {
 public:
  Qwen3(const Qwen3Config& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Qwen3Layer& l = layers_[i];
      l.input_norm.eps = l.post_norm.eps = c.eps;
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = c.rope_theta,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.attn.q_norm.eps = l.attn.k_norm.eps = c.eps;
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
      Qwen3Layer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      visit_attention(v, p, c_.d_model, &l.attn);
      visit_norm(v, p + "post_attention_layernorm.weight", c_.d_model, &l.post_norm);
      visit_mlp(v, p, c_.d_model, c_.d_ff, &l.mlp);
    }
    visit_norm(v, p_ + "norm.weight", c_.d_model, &final_norm_);
    // A tied checkpoint may still carry lm_head.weight (Qwen3-0.6B does); it is redundant.
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    const Qwen3Layer& l = layers_.front();
    return 2 * c_.d_model + std::max(attention_scratch_per_row(l.attn), mlp_scratch_per_row(l.mlp));
  }

  // Spec 1.3, per layer: h += attn(norm(h)); h += mlp(norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const Qwen3Layer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      attention_block(ctx, l.attn, x, y);
      kernels::add(h, y, n * d);
      apply_norm(l.post_norm, h, x, n, d);
      swiglu_mlp(ctx, l.mlp, x, y);
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  Qwen3Config c_;
  std::string p_;
  std::vector<Qwen3Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Qwen3Config q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Qwen3>(q, prefix));
}

}  // namespace recur::model
