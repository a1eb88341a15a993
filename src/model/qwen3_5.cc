// Qwen3.5 small dense hybrid (spec section 2): Gated DeltaNet mixers on most layers, output-gated
// full attention (partial RoPE) every full_attention_interval-th layer, SwiGLU MLP everywhere.
// All block norms and q/k norms are zero-centred (1 + w); the GDN output norm is plain and gated.
#include <algorithm>
#include <cmath>

#include "model/blocks.h"

namespace recur::model {

namespace {

struct Qwen35Config {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, rotary_dim = 0;
  std::int64_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, conv_kernel = 0;
  float eps = 1e-6f, rope_theta = 1e7f;
  bool tied = false;
  std::vector<bool> is_attention;  // per layer: full attention, else Gated DeltaNet
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

Result<std::vector<bool>> parse_schedule(const ConfigJson& c, std::int64_t n_layers) {
  std::vector<bool> out;
  if (c.has("layer_types")) {
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings("layer_types"));
    if (static_cast<std::int64_t>(types.size()) != n_layers) {
      return Error(StatusCode::kInvalidArgument, "{}: layer_types has {} entries for {} layers",
                   c.file(), types.size(), n_layers);
    }
    for (const auto& t : types) {
      if (t != "full_attention" && t != "linear_attention") {
        return Error(StatusCode::kInvalidArgument, "{}: unknown layer type '{}'", c.file(), t);
      }
      out.push_back(t == "full_attention");
    }
    return out;
  }
  // HF default: layer i is full attention iff (i + 1) % interval == 0.
  RECUR_ASSIGN_OR_RETURN(std::int64_t interval, c.get_int("full_attention_interval", 4));
  if (interval <= 0) {
    return Error(StatusCode::kInvalidArgument, "{}: full_attention_interval must be positive",
                 c.file());
  }
  for (std::int64_t i = 0; i < n_layers; ++i) out.push_back((i + 1) % interval == 0);
  return out;
}

Result<Qwen35Config> parse_config(const ConfigJson& c) {
  Qwen35Config q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
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
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 1e7));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  // HF uses 0.25 when the factor is in neither place (spec 2.1).
  RECUR_ASSIGN_OR_RETURN(double f_top, c.get_float("partial_rotary_factor", 0.25));
  RECUR_ASSIGN_OR_RETURN(double factor,
                         c.get_float("rope_parameters.partial_rotary_factor", f_top));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  for (std::int64_t v : {q.d_model, q.n_layers, q.d_ff, q.vocab_size, q.n_heads, q.n_kv_heads,
                         q.head_dim, q.lin_k_heads, q.lin_v_heads, q.lin_k_dim, q.lin_v_dim}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: a size field is zero or negative", c.file());
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size},
                        {q.n_heads, q.n_kv_heads, q.head_dim, q.lin_k_heads, q.lin_v_heads,
                         q.lin_k_dim, q.lin_v_dim, q.conv_kernel}));
  RECUR_ASSIGN_OR_RETURN(q.is_attention, parse_schedule(c, q.n_layers));
  if (!(factor >= 0 && factor <= 1)) {
    return Error(StatusCode::kInvalidArgument, "{}: partial_rotary_factor {} is not in [0, 1]",
                 c.file(), factor);
  }
  q.rotary_dim = static_cast<std::int64_t>(static_cast<double>(q.head_dim) * factor);
  if (q.n_heads % q.n_kv_heads != 0 || q.lin_v_heads % q.lin_k_heads != 0 ||
      q.rotary_dim % 2 != 0 || q.rotary_dim > q.head_dim || q.head_dim > kernels::kMaxHeadDim ||
      q.conv_kernel < 1) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported geometry (heads {}/{}, head_dim {}, rotary {}, linear heads "
                 "{}/{}, conv {})",
                 c.file(), q.n_heads, q.n_kv_heads, q.head_dim, q.rotary_dim, q.lin_k_heads,
                 q.lin_v_heads, q.conv_kernel);
  }
  return q;
}

struct Qwen35Layer {
  bool is_attention = false;
  NormW input_norm, post_norm;  // zero-centred
  AttentionW attn;              // when is_attention
  GatedDeltaW gdn;              // otherwise
  MlpW mlp;
};

NormW zero_centred(float eps) { return {.eps = eps, .zero_centred = true}; }

class Qwen35 final : public FamilyModel {
 public:
  Qwen35(const Qwen35Config& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Qwen35Layer& l = layers_[i];
      l.is_attention = c.is_attention[i];
      l.input_norm = l.post_norm = zero_centred(c.eps);
      l.attn = {.q_norm = zero_centred(c.eps),
                .k_norm = zero_centred(c.eps),
                .n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.rotary_dim,
                .rope_theta = c.rope_theta,
                .output_gate = true,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.gdn = {.norm = {.eps = c.eps},
               .n_k_heads = c.lin_k_heads,
               .n_v_heads = c.lin_v_heads,
               .k_dim = c.lin_k_dim,
               .v_dim = c.lin_v_dim,
               .conv_kernel = c.conv_kernel,
               .layer = i};
    }
    final_norm_ = zero_centred(c.eps);
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) {
      s.layers.push_back(l.is_attention ? attention_state(l.attn) : gated_delta_state(l.gdn));
    }
    return s;
  }

  // Unused tensors (model.visual.*, mtp.*) are simply never visited.
  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Qwen35Layer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      if (l.is_attention) {
        visit_attention(v, p, c_.d_model, &l.attn);
      } else {
        visit_gated_delta(v, p, c_.d_model, &l.gdn);
      }
      visit_norm(v, p + "post_attention_layernorm.weight", c_.d_model, &l.post_norm);
      visit_mlp(v, p, c_.d_model, c_.d_ff, &l.mlp);
    }
    visit_norm(v, p_ + "norm.weight", c_.d_model, &final_norm_);
    // mlx-vlm's layout nests the head beside the text model: language_model.lm_head.
    const std::string head =
        p_.starts_with("language_model.") ? "language_model.lm_head.weight" : "lm_head.weight";
    if (!c_.tied) v.matrix(head, c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t need = 0;
    for (const auto& l : layers_) {
      need = std::max({need, mlp_scratch_per_row(l.mlp),
                       l.is_attention ? attention_scratch_per_row(l.attn)
                                      : gated_delta_scratch_per_row(l.gdn)});
    }
    return 2 * c_.d_model + need;
  }

  // Spec 2.4 / 2.5 / 2.7: h += mixer(zc_norm(h)); h += mlp(zc_norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const Qwen35Layer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      if (l.is_attention) {
        attention_block(ctx, l.attn, x, y);
      } else {
        gated_delta_block(ctx, l.gdn, x, y);
      }
      kernels::add(h, y, n * d);
      apply_norm(l.post_norm, h, x, n, d);
      swiglu_mlp(ctx, l.mlp, x, y);
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  bool supports_capture() const override { return true; }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  Qwen35Config c_;
  std::string p_;
  std::vector<Qwen35Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_qwen3_5(const ConfigJson& c,
                                                    const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Qwen35Config q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Qwen35>(q, prefix));
}

}  // namespace recur::model
