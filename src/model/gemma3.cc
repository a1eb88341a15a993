// Gemma 3 text (gemma3_text, and the text part of Gemma3ForConditionalGeneration; docs/model.md
// "Gemma 3"): embeddings scaled by sqrt(hidden); per layer sandwich norms around attention and the
// GeGLU MLP; every norm is (1 + w) ⊙ RMSNorm(x); q/k norms; scores scaled by
// query_pre_attn_scalar^-½; sliding-window layers (a ring of `sliding_window` tokens, local RoPE
// base) interleaved with global ones (rope_theta, optionally linear-scaled); optional final logit
// softcapping.
#include <algorithm>
#include <cmath>

#include "model/blocks.h"
#include "util/dtype.h"

namespace recur::model {

namespace {

struct Gemma3Config {
  std::int64_t d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0;
  std::int64_t vocab_size = 0, window = 0;
  float eps = 1e-6f, query_pre_attn_scalar = 256.0f;
  float global_theta = 1e6f, global_factor = 1.0f, local_theta = 1e4f;
  float final_softcap = 0.0f;  // 0: none
  bool tied = true;
  std::vector<bool> sliding;  // per layer
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// A missing key takes Gemma3TextConfig's default: gemma-3-4b and larger nest a text_config that
// names only what differs from those defaults (hidden size, layers, window, rope_scaling).
Result<float> get_float(const ConfigJson& c, std::string_view key, double fallback) {
  RECUR_ASSIGN_OR_RETURN(double v, c.get_float(key, fallback));
  return static_cast<float>(v);
}

// RoPE of one layer type: transformers 5's rope_parameters.<type> or the older rope_theta /
// rope_local_base_freq and rope_scaling (which applies to global layers only). "default" and
// "linear" (positions divided by factor) are supported.
Status parse_rope(const ConfigJson& c, const std::string& type, float theta_fallback,
                  const char* scaling, float* theta, float* factor) {
  const std::string nested = "rope_parameters." + type + ".";
  RECUR_ASSIGN_OR_RETURN(*theta, get_float(c, nested + "rope_theta", theta_fallback));
  *factor = 1.0f;
  const std::string at = c.has(nested + "rope_type") ? nested : scaling ? scaling : "";
  if (at.empty() || !c.has(at + "rope_type")) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string kind, c.get_string(at + "rope_type"));
  if (kind == "default") return Status::ok();
  if (kind != "linear") {
    return Error(StatusCode::kUnimplemented,
                 "{}: {}rope_type '{}' is not supported for Gemma 3 (only 'default' and 'linear')",
                 c.file(), at, kind);
  }
  RECUR_ASSIGN_OR_RETURN(*factor, get_float(c, at + "factor", 1.0));
  if (!(*factor >= 1.0f)) {
    return Error(StatusCode::kInvalidArgument, "{}: {}factor must be >= 1, got {}", c.file(), at,
                 *factor);
  }
  return Status::ok();
}

Result<std::vector<bool>> parse_schedule(const ConfigJson& c, std::int64_t n_layers) {
  std::vector<bool> sliding;
  if (c.has("layer_types")) {
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings("layer_types"));
    if (static_cast<std::int64_t>(types.size()) != n_layers) {
      return Error(StatusCode::kInvalidArgument, "{}: layer_types has {} entries for {} layers",
                   c.file(), types.size(), n_layers);
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (types[i] != "sliding_attention" && types[i] != "full_attention") {
        return Error(StatusCode::kInvalidArgument,
                     "{}: layer_types[{}] is '{}' (expected sliding_attention or full_attention)",
                     c.file(), i, types[i]);
      }
      sliding.push_back(types[i] == "sliding_attention");
    }
    return sliding;
  }
  // HF: layer i is global iff (i + 1) % sliding_window_pattern == 0 (default 6).
  RECUR_ASSIGN_OR_RETURN(std::int64_t pattern, c.get_int("sliding_window_pattern", 6));
  if (pattern <= 0) {
    return Error(StatusCode::kInvalidArgument, "{}: sliding_window_pattern must be positive",
                 c.file());
  }
  for (std::int64_t i = 0; i < n_layers; ++i) sliding.push_back((i + 1) % pattern != 0);
  return sliding;
}

Result<Gemma3Config> parse_config(const ConfigJson& c) {
  Gemma3Config g;
  RECUR_ASSIGN_OR_RETURN(g.d_model, c.get_int("hidden_size", 2304));
  RECUR_ASSIGN_OR_RETURN(g.n_layers, c.get_int("num_hidden_layers", 26));
  RECUR_ASSIGN_OR_RETURN(g.n_heads, c.get_int("num_attention_heads", 8));
  RECUR_ASSIGN_OR_RETURN(g.n_kv_heads, c.get_int("num_key_value_heads", 4));
  RECUR_ASSIGN_OR_RETURN(g.head_dim, c.get_int("head_dim", 256));
  RECUR_ASSIGN_OR_RETURN(g.d_ff, c.get_int("intermediate_size", 9216));
  RECUR_ASSIGN_OR_RETURN(g.vocab_size, c.get_int("vocab_size", 262208));
  RECUR_ASSIGN_OR_RETURN(g.window, c.get_int("sliding_window", 4096));
  RECUR_ASSIGN_OR_RETURN(g.eps, get_float(c, "rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(g.query_pre_attn_scalar, get_float(c, "query_pre_attn_scalar", 256));
  RECUR_ASSIGN_OR_RETURN(float theta, get_float(c, "rope_theta", 1e6));
  RECUR_ASSIGN_OR_RETURN(float local, get_float(c, "rope_local_base_freq", 1e4));
  RECUR_RETURN_IF_ERROR(
      parse_rope(c, "full_attention", theta, "rope_scaling.", &g.global_theta, &g.global_factor));
  float local_factor = 1.0f;
  RECUR_RETURN_IF_ERROR(
      parse_rope(c, "sliding_attention", local, nullptr, &g.local_theta, &local_factor));
  if (local_factor != 1.0f) {
    return Error(StatusCode::kUnimplemented,
                 "{}: RoPE scaling on sliding-window layers is not supported", c.file());
  }
  RECUR_ASSIGN_OR_RETURN(g.final_softcap, get_float(c, "final_logit_softcapping", 0.0));
  RECUR_ASSIGN_OR_RETURN(g.tied, c.get_bool("tie_word_embeddings", true));
  RECUR_ASSIGN_OR_RETURN(g.kv_dtype, kv_dtype_from_config(c));
  // The attention kernel has no score softcapping (Gemma 2 used it; Gemma 3 configs leave it
  // null) and Gemma 3 has no projection biases: refused rather than silently ignored.
  if (c.has("attn_logit_softcapping")) {
    return Error(StatusCode::kUnimplemented,
                 "{}: attn_logit_softcapping is not supported (Gemma 3 checkpoints leave it null)",
                 c.file());
  }
  RECUR_ASSIGN_OR_RETURN(bool bias, c.get_bool("attention_bias", false));
  if (bias) {
    return Error(StatusCode::kUnimplemented, "{}: attention_bias true is not supported for Gemma 3",
                 c.file());
  }
  for (const char* key : {"hidden_activation", "hidden_act"}) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string(key));
    if (act != "gelu_pytorch_tanh") {
      return Error(StatusCode::kUnimplemented,
                   "{}: {} '{}' is not supported (only gelu_pytorch_tanh)", c.file(), key, act);
    }
    break;
  }
  for (auto [v, name] : {std::pair{g.d_model, "hidden_size"},
                         {g.n_layers, "num_hidden_layers"},
                         {g.n_heads, "num_attention_heads"},
                         {g.n_kv_heads, "num_key_value_heads"},
                         {g.head_dim, "head_dim"},
                         {g.d_ff, "intermediate_size"},
                         {g.vocab_size, "vocab_size"},
                         {g.window, "sliding_window"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  if (!(g.query_pre_attn_scalar > 0.0f) || g.final_softcap < 0.0f) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: query_pre_attn_scalar must be positive and final_logit_softcapping not "
                 "negative",
                 c.file());
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, g.n_layers, {g.d_model, g.d_ff, g.vocab_size},
                                          {g.n_heads, g.n_kv_heads, g.head_dim}));
  if (g.window > (1 << 20)) {
    return Error(StatusCode::kInvalidArgument, "{}: sliding_window {} is beyond 2^20 tokens",
                 c.file(), g.window);
  }
  if (g.n_heads % g.n_kv_heads != 0 || g.head_dim % 2 != 0 || g.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), g.n_heads, g.n_kv_heads, g.head_dim);
  }
  RECUR_ASSIGN_OR_RETURN(g.sliding, parse_schedule(c, g.n_layers));
  return g;
}

// Gemma's norms are always (1 + w) ⊙ x̂ with w as trained: HF and mlx-lm checkpoints alike store
// w, so the 1 is added here whatever the checkpoint's format (unlike Qwen3.5's MLX files).
void visit_gemma_norm(TensorVisitor& v, const std::string& name, std::int64_t width, float eps,
                      NormW* n) {
  n->eps = eps;
  v.vector(name, {width}, &n->w);
  for (float& x : n->w) x = 1.0f + x;
}

// sqrt(hidden_size) as HF multiplies it: a tensor cast to the embedding's dtype (bf16 turns
// sqrt(1152) = 33.94 into 34), then an f32 product with the f32 activations.
float embedding_scale(std::int64_t d_model, kernels::DType dtype) {
  const auto s = static_cast<float>(std::sqrt(static_cast<double>(d_model)));
  if (dtype == kernels::DType::kBF16) return round_to_bf16(s);
  if (dtype == kernels::DType::kF16) return f16_to_f32(f32_to_f16(s));
  return s;
}

struct Gemma3Layer {
  NormW input_norm, post_attn_norm, pre_ff_norm, post_ff_norm;
  AttentionW attn;
  MlpW mlp;
};

class Gemma3 final : public FamilyModel {
 public:
  Gemma3(const Gemma3Config& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const bool sliding = c.sliding[i];
      Gemma3Layer& l = layers_[i];
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = sliding ? c.local_theta : c.global_theta,
                .scale = 1.0f / std::sqrt(c.query_pre_attn_scalar),
                .window = sliding ? c.window : 0,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      if (!sliding && c.global_factor != 1.0f) {
        // HF's linear scaling: inv_freq / factor, the rest as the default RoPE (f32).
        const std::int64_t half = c.head_dim / 2;
        for (std::int64_t j = 0; j < half; ++j) {
          const float inv = 1.0f / std::pow(c.global_theta, static_cast<float>(2 * j) /
                                                                static_cast<float>(c.head_dim));
          l.attn.inv_freq.push_back(inv / c.global_factor);
        }
      }
    }
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) s.layers.push_back(attention_state(l.attn));
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    const std::int64_t d = c_.d_model, hd = c_.head_dim;
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, d, &embed_);
    embed_scale_ = embedding_scale(d, embed_.dtype);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Gemma3Layer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_gemma_norm(v, p + "input_layernorm.weight", d, c_.eps, &l.input_norm);
      l.attn.qk_norm = false;  // Gemma's q/k norms are (1 + w): visited below
      visit_attention(v, p, d, &l.attn);
      l.attn.qk_norm = true;
      visit_gemma_norm(v, p + "self_attn.q_norm.weight", hd, c_.eps, &l.attn.q_norm);
      visit_gemma_norm(v, p + "self_attn.k_norm.weight", hd, c_.eps, &l.attn.k_norm);
      visit_gemma_norm(v, p + "post_attention_layernorm.weight", d, c_.eps, &l.post_attn_norm);
      visit_gemma_norm(v, p + "pre_feedforward_layernorm.weight", d, c_.eps, &l.pre_ff_norm);
      visit_mlp(v, p, d, c_.d_ff, &l.mlp);
      visit_gemma_norm(v, p + "post_feedforward_layernorm.weight", d, c_.eps, &l.post_ff_norm);
    }
    visit_gemma_norm(v, p_ + "norm.weight", d, c_.eps, &final_norm_);
    if (!c_.tied) v.matrix(head_name(), c_.vocab_size, d, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    const Gemma3Layer& l = layers_.front();
    return 2 * c_.d_model + std::max(attention_scratch_per_row(l.attn), mlp_scratch_per_row(l.mlp));
  }

  // Per layer: h += post_attn_norm(attn(input_norm(h))); h += post_ff_norm(mlp(pre_ff_norm(h))).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (std::int64_t i = 0; i < n * d; ++i) h[i] *= embed_scale_;
    for (const Gemma3Layer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      attention_block(ctx, l.attn, x, y);
      apply_norm(l.post_attn_norm, y, y, n, d);
      kernels::add(h, y, n * d);
      apply_norm(l.pre_ff_norm, h, x, n, d);
      geglu_mlp(ctx, l.mlp, x, y);
      apply_norm(l.post_ff_norm, y, y, n, d);
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }

  // final_logit_softcapping: logits ← cap · tanh(logits / cap).
  void finish_logits(float* logits, std::int64_t n_rows) const override {
    if (c_.final_softcap == 0.0f) return;
    const float cap = c_.final_softcap;
    for (std::int64_t i = 0; i < n_rows * c_.vocab_size; ++i) {
      logits[i] = std::tanh(logits[i] / cap) * cap;
    }
  }

  bool supports_capture() const override { return true; }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  // Gemma3ForCausalLM keeps its head at lm_head.weight beside model.*; the conditional-generation
  // wrappers (prefix language_model.model. or model.language_model.) beside their model.
  std::string head_name() const {
    if (p_ == "language_model.model.") return "language_model.lm_head.weight";
    return "lm_head.weight";
  }

  Gemma3Config c_;
  std::string p_;
  std::vector<Gemma3Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
  float embed_scale_ = 1.0f;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_gemma3(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Gemma3Config g, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Gemma3>(g, prefix));
}

}  // namespace recur::model
