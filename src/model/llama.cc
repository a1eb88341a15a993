// Llama (LlamaForCausalLM, docs/model.md "Llama"): every layer is RMSNorm → GQA attention (no q/k
// norm, optional q/k/v/o biases, full RoPE, optionally llama3-scaled) → residual → RMSNorm →
// SwiGLU (optional biases) → residual; final RMSNorm; tied or separate head.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "model/blocks.h"

namespace recur::model {

namespace {

struct Llama3Scaling {
  double factor = 0.0, low_freq_factor = 0.0, high_freq_factor = 0.0, original_max_pos = 0.0;
};

struct LlamaConfig {
  std::int64_t d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0;
  std::int64_t vocab_size = 0;
  float eps = 1e-6f;
  double rope_theta = 10000.0;
  std::optional<Llama3Scaling> llama3;
  bool tied = false, attention_bias = false, mlp_bias = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// rope_scaling (transformers 4) or rope_parameters (transformers 5): absent, "default" or
// "llama3" with its four parameters; any other type is refused.
Status parse_rope(const ConfigJson& c, LlamaConfig& q) {
  std::string group, type = "default";
  for (const char* g : {"rope_parameters", "rope_scaling"}) {
    for (const char* key : {"rope_type", "type"}) {
      const std::string k = std::string(g) + "." + key;
      if (group.empty() && c.has(k)) {
        RECUR_ASSIGN_OR_RETURN(type, c.get_string(k));
        group = g;
      }
    }
  }
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 10000.0));
  RECUR_ASSIGN_OR_RETURN(q.rope_theta, c.get_float("rope_parameters.rope_theta", theta_top));
  if (type == "default") return Status::ok();
  if (type != "llama3") {
    return Error(StatusCode::kUnimplemented,
                 "{}: {}.rope_type '{}' is not supported (llama: 'default' or 'llama3')", c.file(),
                 group, type);
  }
  Llama3Scaling s;
  for (auto [slot, key] : {std::pair{&s.factor, "factor"},
                           {&s.low_freq_factor, "low_freq_factor"},
                           {&s.high_freq_factor, "high_freq_factor"},
                           {&s.original_max_pos, "original_max_position_embeddings"}}) {
    RECUR_ASSIGN_OR_RETURN(*slot, c.get_float(group + "." + key));
    if (!(*slot > 0.0)) {
      return Error(StatusCode::kInvalidArgument, "{}: {}.{} must be positive", c.file(), group,
                   key);
    }
  }
  if (!(s.high_freq_factor > s.low_freq_factor)) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: {}.high_freq_factor must be greater than low_freq_factor", c.file(), group);
  }
  q.llama3 = s;
  return Status::ok();
}

Result<LlamaConfig> parse_config(const ConfigJson& c) {
  LlamaConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", q.n_heads));
  RECUR_ASSIGN_OR_RETURN(q.head_dim,
                         c.get_int("head_dim", q.n_heads > 0 ? q.d_model / q.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.mlp_bias, c.get_bool("mlp_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(parse_rope(c, q));
  if (c.has("hidden_act")) {
    RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string("hidden_act"));
    if (act != "silu") {
      return Error(StatusCode::kUnimplemented, "{}: hidden_act '{}' is not supported (only silu)",
                   c.file(), act);
    }
  }
  q.eps = static_cast<float>(eps);
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

// transformers' _compute_llama3_parameters, in double, rounded once to the f32 the kernel
// multiplies positions by: wavelengths shorter than original/high_freq_factor keep their
// frequency, longer than original/low_freq_factor are divided by factor, and those between blend
// the two linearly in original/wavelen.
std::vector<float> llama3_inv_freq(const LlamaConfig& c) {
  const Llama3Scaling& s = *c.llama3;
  const double low_wavelen = s.original_max_pos / s.low_freq_factor;
  const double high_wavelen = s.original_max_pos / s.high_freq_factor;
  std::vector<float> out(static_cast<std::size_t>(c.head_dim / 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double f =
        1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.head_dim));
    const double wavelen = 2.0 * std::numbers::pi / f;
    double scaled = f;
    if (wavelen > low_wavelen) {
      scaled = f / s.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (s.original_max_pos / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      scaled = (1.0 - smooth) * f / s.factor + smooth * f;
    }
    out[i] = static_cast<float>(scaled);
  }
  return out;
}

struct LlamaLayer {
  NormW input_norm, post_norm;
  AttentionW attn;
  MlpW mlp;
};

class Llama final : public FamilyModel {
 public:
  Llama(const LlamaConfig& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    const std::vector<float> inv_freq = c.llama3 ? llama3_inv_freq(c) : std::vector<float>{};
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      LlamaLayer& l = layers_[i];
      l.input_norm.eps = l.post_norm.eps = c.eps;
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = static_cast<float>(c.rope_theta),
                .inv_freq = inv_freq,
                .qk_norm = false,
                .bias = c.attention_bias,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.mlp.bias = c.mlp_bias;
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
      LlamaLayer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      visit_attention(v, p, c_.d_model, &l.attn);
      visit_norm(v, p + "post_attention_layernorm.weight", c_.d_model, &l.post_norm);
      visit_mlp(v, p, c_.d_model, c_.d_ff, &l.mlp);
    }
    visit_norm(v, p_ + "norm.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    const LlamaLayer& l = layers_.front();
    return 2 * c_.d_model + std::max(attention_scratch_per_row(l.attn), mlp_scratch_per_row(l.mlp));
  }

  // Per layer: h += attn(norm(h)); h += mlp(norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const LlamaLayer& l : layers_) {
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
  LlamaConfig c_;
  std::string p_;
  std::vector<LlamaLayer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_llama(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(LlamaConfig q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Llama>(q, prefix));
}

}  // namespace recur::model
