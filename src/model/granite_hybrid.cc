// IBM Granite 4.0-H, dense ("micro" 350M / 1B / 3B; model_type granitemoehybrid, docs/model.md
// "Granite 4.0-H"): each layer is RMSNorm → Mamba2 mixer or GQA attention (no q/k norm, no RoPE
// unless position_embedding_type is "rope", scores scaled by attention_multiplier) → residual
// scaled by residual_multiplier → RMSNorm → SwiGLU shared_mlp → scaled residual; the embedding is
// multiplied by embedding_multiplier and the logits divided by logits_scaling (muP). The MoE
// variants (granite-4.0-h-tiny / -small: num_local_experts > 0) add block_sparse_moe beside the
// shared_mlp: a softmax over the top num_experts_per_tok router logits (model/moe.h) weights
// SwiGLU experts of intermediate_size, and the layer's MLP output is moe(x) + shared_mlp(x).
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/blocks.h"
#include "model/mlp_variants.h"
#include "model/moe.h"

namespace recur::model {

namespace {

struct GraniteConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t ssm_heads = 0, ssm_head_dim = 0, ssm_state = 0, ssm_groups = 0, conv_kernel = 0;
  std::int64_t n_experts = 0, top_k = 0, moe_d_ff = 0;  // MoE variants: num_local_experts > 0
  float eps = 1e-6f, rope_theta = 10000.0f;
  float embedding_multiplier = 1.0f, residual_multiplier = 1.0f, attention_multiplier = 1.0f;
  float logits_scaling = 1.0f;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();
  bool tied = false, rope = false, conv_bias = true, attention_bias = false;
  std::vector<bool> is_attention;  // per layer, else Mamba2
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// layer_types (also layers_block_type): "mamba" / "attention"; absent means every layer Mamba2,
// as HF's config property.
Result<std::vector<bool>> parse_schedule(const ConfigJson& c, std::int64_t n_layers) {
  const char* key = c.has("layer_types") ? "layer_types" : "layers_block_type";
  if (!c.has(key)) return std::vector<bool>(static_cast<std::size_t>(n_layers), false);
  RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings(key));
  if (static_cast<std::int64_t>(types.size()) != n_layers) {
    return Error(StatusCode::kInvalidArgument, "{}: {} has {} entries for {} layers", c.file(), key,
                 types.size(), n_layers);
  }
  std::vector<bool> out;
  for (const auto& t : types) {
    if (t != "mamba" && t != "attention") {
      return Error(StatusCode::kInvalidArgument,
                   "{}: {} holds '{}' (granitemoehybrid layers are 'mamba' or 'attention')",
                   c.file(), key, t);
    }
    out.push_back(t == "attention");
  }
  return out;
}

Result<float> get_multiplier(const ConfigJson& c, const char* key) {
  RECUR_ASSIGN_OR_RETURN(double v, c.get_float(key, 1.0));
  if (!std::isfinite(v) || v == 0.0) {
    return Error(StatusCode::kInvalidArgument, "{}: {} must be finite and non-zero, got {}",
                 c.file(), key, v);
  }
  return static_cast<float>(v);
}

Status parse_mamba(const ConfigJson& c, GraniteConfig& g) {
  RECUR_ASSIGN_OR_RETURN(g.ssm_heads, c.get_int("mamba_n_heads", 128));
  RECUR_ASSIGN_OR_RETURN(std::int64_t expand, c.get_int("mamba_expand", 2));
  // mamba_d_head may be the string "auto": expand · hidden / heads (HF config).
  g.ssm_head_dim = g.ssm_heads > 0 ? expand * g.d_model / g.ssm_heads : 0;
  if (c.has("mamba_d_head")) {
    auto text = c.get_string("mamba_d_head");
    if (!text.is_ok() || *text != "auto") {
      RECUR_ASSIGN_OR_RETURN(g.ssm_head_dim, c.get_int("mamba_d_head"));
    }
  }
  RECUR_ASSIGN_OR_RETURN(g.ssm_state, c.get_int("mamba_d_state", 256));
  RECUR_ASSIGN_OR_RETURN(g.ssm_groups, c.get_int("mamba_n_groups", 1));
  RECUR_ASSIGN_OR_RETURN(g.conv_kernel, c.get_int("mamba_d_conv", 4));
  RECUR_ASSIGN_OR_RETURN(g.conv_bias, c.get_bool("mamba_conv_bias", true));
  RECUR_ASSIGN_OR_RETURN(bool proj_bias, c.get_bool("mamba_proj_bias", false));
  if (proj_bias) {
    return Error(StatusCode::kUnimplemented,
                 "{}: mamba_proj_bias=true (in/out projection bias) is not supported", c.file());
  }
  // HF reads time_step_limit when the config has it, else (0, inf): no clamp. (mlx-lm defaults
  // to (0.001, 100); docs/model.md.)
  if (c.has("time_step_limit")) {
    RECUR_ASSIGN_OR_RETURN(auto lim, c.get_floats("time_step_limit"));
    if (lim.size() != 2 || !(lim[0] <= lim[1])) {
      return Error(StatusCode::kInvalidArgument, "{}: time_step_limit must be [min, max]",
                   c.file());
    }
    g.dt_min = static_cast<float>(lim[0]);
    g.dt_max = static_cast<float>(lim[1]);
  }
  for (auto [v, name] : {std::pair{g.ssm_heads, "mamba_n_heads"},
                         {g.ssm_head_dim, "mamba_d_head"},
                         {g.ssm_state, "mamba_d_state"},
                         {g.ssm_groups, "mamba_n_groups"},
                         {g.conv_kernel, "mamba_d_conv"},
                         {expand, "mamba_expand"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(
      c, g.n_layers, {}, {g.ssm_heads, g.ssm_head_dim, g.ssm_state, g.ssm_groups, g.conv_kernel}));
  if (g.ssm_heads * g.ssm_head_dim != expand * g.d_model || g.ssm_heads % g.ssm_groups != 0) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: mamba_n_heads {} x mamba_d_head {} must equal mamba_expand {} x hidden_size "
                 "{}, and mamba_n_heads must be a multiple of mamba_n_groups {}",
                 c.file(), g.ssm_heads, g.ssm_head_dim, expand, g.d_model, g.ssm_groups);
  }
  return Status::ok();
}

Status parse_attention(const ConfigJson& c, GraniteConfig& g) {
  RECUR_ASSIGN_OR_RETURN(g.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(g.n_kv_heads, c.get_int("num_key_value_heads", g.n_heads));
  RECUR_ASSIGN_OR_RETURN(g.head_dim,
                         c.get_int("head_dim", g.n_heads > 0 ? g.d_model / g.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(g.attention_bias, c.get_bool("attention_bias", false));
  // HF applies RoPE only when position_embedding_type is "rope" (granite-4.0-h: "nope").
  if (c.has("position_embedding_type")) {
    RECUR_ASSIGN_OR_RETURN(std::string type, c.get_string("position_embedding_type"));
    if (type != "rope" && type != "nope") {
      return Error(StatusCode::kUnimplemented,
                   "{}: position_embedding_type '{}' is not supported ('rope' or 'nope')", c.file(),
                   type);
    }
    g.rope = type == "rope";
  }
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 10000.0));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  g.rope_theta = static_cast<float>(theta);
  if (g.rope) RECUR_RETURN_IF_ERROR(check_default_rope(c));
  for (auto [v, name] : {std::pair{g.n_heads, "num_attention_heads"},
                         {g.n_kv_heads, "num_key_value_heads"},
                         {g.head_dim, "head_dim"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  if (g.n_heads % g.n_kv_heads != 0 || g.head_dim % 2 != 0 || g.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), g.n_heads, g.n_kv_heads, g.head_dim);
  }
  return Status::ok();
}

Result<GraniteConfig> parse_config(const ConfigJson& c) {
  GraniteConfig g;
  RECUR_ASSIGN_OR_RETURN(g.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(g.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(g.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(g.d_ff, c.get_int("shared_intermediate_size", 1024));
  // HF's defaults: 8 experts, 2 per token, 1024 wide (the dense models write 0 experts).
  RECUR_ASSIGN_OR_RETURN(g.n_experts, c.get_int("num_local_experts", 8));
  if (g.n_experts > 0) {
    RECUR_ASSIGN_OR_RETURN(g.top_k, c.get_int("num_experts_per_tok", 2));
    RECUR_ASSIGN_OR_RETURN(g.moe_d_ff, c.get_int("intermediate_size", 1024));
    // Experts are loaded as one view each: 4096 bounds the tensor count of a corrupt config.
    constexpr std::int64_t kMaxExperts = 4096;
    if (g.n_experts > kMaxExperts || g.top_k < 1 || g.top_k > g.n_experts || g.moe_d_ff <= 0) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: num_local_experts {}, num_experts_per_tok {}, intermediate_size {}: need "
                   "num_local_experts <= {}, 1 <= num_experts_per_tok <= num_local_experts and a "
                   "positive intermediate_size",
                   c.file(), g.n_experts, g.top_k, g.moe_d_ff, kMaxExperts);
    }
  } else if (g.n_experts < 0) {
    return Error(StatusCode::kInvalidArgument, "{}: num_local_experts must not be negative",
                 c.file());
  }
  if (c.has("hidden_act")) {
    RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string("hidden_act"));
    if (act != "silu") {
      return Error(StatusCode::kUnimplemented, "{}: hidden_act '{}' is not supported (only silu)",
                   c.file(), act);
    }
  }
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  g.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(g.embedding_multiplier, get_multiplier(c, "embedding_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.residual_multiplier, get_multiplier(c, "residual_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.attention_multiplier, get_multiplier(c, "attention_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.logits_scaling, get_multiplier(c, "logits_scaling"));
  RECUR_ASSIGN_OR_RETURN(g.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(g.kv_dtype, kv_dtype_from_config(c));
  for (auto [v, name] : {std::pair{g.d_model, "hidden_size"},
                         {g.n_layers, "num_hidden_layers"},
                         {g.vocab_size, "vocab_size"},
                         {g.d_ff, "shared_intermediate_size"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, g.n_layers, {g.d_model, g.d_ff, g.vocab_size, g.moe_d_ff}, {}));
  RECUR_ASSIGN_OR_RETURN(g.is_attention, parse_schedule(c, g.n_layers));
  RECUR_RETURN_IF_ERROR(parse_mamba(c, g));
  RECUR_RETURN_IF_ERROR(parse_attention(c, g));
  return g;
}

struct GraniteLayer {
  bool is_attention = false;
  NormW input_norm, post_norm;
  AttentionW attn;  // when is_attention
  Mamba2W mamba;    // otherwise
  // shared_mlp.input_linear / output_linear (Hugging Face), or MLX's split mlp.{gate,up,down}_proj.
  bool split_mlp = false;
  FusedGluW fused;
  MlpW split;
  bool sparse = false;  // block_sparse_moe beside the shared MLP
  MoeW moe;
};

class GraniteHybrid final : public FamilyModel {
 public:
  GraniteHybrid(const GraniteConfig& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      GraniteLayer& l = layers_[i];
      l.is_attention = c.is_attention[i];
      l.input_norm.eps = l.post_norm.eps = c.eps;
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.rope ? c.head_dim : 0,
                .rope_theta = c.rope_theta,
                .scale = c.attention_multiplier,
                .qk_norm = false,
                .bias = c.attention_bias,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.mamba = {.norm = {.eps = c.eps},
                 .n_heads = c.ssm_heads,
                 .head_dim = c.ssm_head_dim,
                 .d_state = c.ssm_state,
                 .n_groups = c.ssm_groups,
                 .conv_kernel = c.conv_kernel,
                 .dt_min = c.dt_min,
                 .dt_max = c.dt_max,
                 .conv_bias_present = c.conv_bias,
                 .layer = i,
                 .module = "mamba."};
      l.fused.d_ff = c.d_ff;
      l.sparse = c.n_experts > 0;
      // HF: block_sparse_moe.router.layer, input_linear [E, 2 * I, H] (gate rows first),
      // output_linear [E, H, I]; MLX: block_sparse_moe.switch_mlp.{gate,up,down}_proj. The softmax
      // over the top k logits is the renormalised softmax over all of them.
      l.moe = {.n_experts = c.n_experts,
               .top_k = c.top_k,
               .d_ff = c.moe_d_ff,
               .norm_topk_prob = true,
               .names = {.module = "block_sparse_moe.",
                         .router = "router.layer.weight",
                         .fused_gate_up = "input_linear.weight",
                         .fused_down = "output_linear.weight",
                         .per_expert = false}};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) {
      s.layers.push_back(l.is_attention ? attention_state(l.attn) : mamba2_state(l.mamba));
    }
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      GraniteLayer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      if (l.is_attention) {
        visit_attention(v, p, c_.d_model, &l.attn);
      } else {
        visit_mamba2(v, p, c_.d_model, &l.mamba);
      }
      visit_norm(v, p + "post_attention_layernorm.weight", c_.d_model, &l.post_norm);
      l.split_mlp = v.has_tensor(p + "mlp.gate_proj.weight");
      if (l.split_mlp) {
        visit_mlp(v, p, c_.d_model, c_.d_ff, &l.split);
      } else {
        visit_fused_glu(v, p + "shared_mlp.input_linear.weight",
                        p + "shared_mlp.output_linear.weight", c_.d_model, &l.fused);
      }
      if (l.sparse) visit_moe(v, p, c_.d_model, &l.moe);
    }
    visit_norm(v, p_ + "norm.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t need = 0;
    for (const auto& l : layers_) {
      need = std::max(
          {need, fused_glu_scratch_per_row(l.fused), mlp_scratch_per_row(l.split),
           l.is_attention ? attention_scratch_per_row(l.attn) : mamba2_scratch_per_row(l.mamba)});
      // The shared MLP's output beside the experts' (which it may take the room of).
      if (l.sparse) {
        need = std::max({need, c_.d_model + moe_scratch_per_row(l.moe),
                         c_.d_model + fused_glu_scratch_per_row(l.fused),
                         c_.d_model + mlp_scratch_per_row(l.split)});
      }
    }
    return 2 * c_.d_model + need;
  }

  // h = embedding · embedding_multiplier; per layer h += m · mixer(norm(h)); h += m · mlp(norm(h)),
  // mlp(x) = moe(x) + shared_mlp(x) in the MoE variants.
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (std::int64_t i = 0; i < n * d; ++i) h[i] *= c_.embedding_multiplier;
    for (const GraniteLayer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      if (l.is_attention) {
        attention_block(ctx, l.attn, x, y);
      } else {
        mamba2_block(ctx, l.mamba, x, y);
      }
      add_scaled(h, y, c_.residual_multiplier, n * d);
      apply_norm(l.post_norm, h, x, n, d);
      float* shared = y;
      if (l.sparse) {
        moe_block(ctx, l.moe, x, y);
        shared = ctx.scratch->take(n * d);
      }
      if (l.split_mlp) {
        swiglu_mlp(ctx, l.split, x, shared);
      } else {
        fused_swiglu_mlp(ctx, l.fused, x, shared);
      }
      if (l.sparse) kernels::add(y, shared, n * d);  // HF: moe_out + shared_mlp(x)
      add_scaled(h, y, c_.residual_multiplier, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  // HF divides the head's output by logits_scaling.
  void finish_logits(float* logits, std::int64_t n_rows) const override {
    if (c_.logits_scaling == 1.0f) return;
    for (std::int64_t i = 0; i < n_rows * c_.vocab_size; ++i) logits[i] /= c_.logits_scaling;
  }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }
  // mamba2_block records captures; attention and MLP layers need none.
  bool supports_capture() const override { return true; }

 private:
  GraniteConfig c_;
  std::string p_;
  std::vector<GraniteLayer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_granite_hybrid(const ConfigJson& c,
                                                           const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(GraniteConfig g, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<GraniteHybrid>(g, prefix));
}

}  // namespace recur::model
