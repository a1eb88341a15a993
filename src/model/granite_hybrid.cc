// IBM Granite 4.0-H, dense ("micro" 350M / 1B / 3B; model_type granitemoehybrid,
// docs/model-granite.md): each layer is RMSNorm → Mamba2 mixer or GQA attention (no q/k norm, no
// RoPE unless position_embedding_type is "rope", scores scaled by attention_multiplier) → residual
// scaled by residual_multiplier → RMSNorm → SwiGLU shared_mlp → scaled residual; the embedding is
// multiplied by embedding_multiplier and the logits divided by logits_scaling (muP). The MoE
// variants (granite-4.0-h-tiny / -small: num_local_experts > 0) add block_sparse_moe beside the
// shared_mlp: a softmax over the top num_experts_per_tok router logits (model/moe.h) weights
// SwiGLU experts of intermediate_size, and the layer's MLP output is moe(x) + shared_mlp(x).
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct GraniteConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  AttentionGeometry attn;
  Mamba2Geometry ssm;
  std::int64_t n_experts = 0, top_k = 0, moe_d_ff = 0;  // MoE variants: num_local_experts > 0
  float eps = 1e-6f, rope_theta = 10000.0f;
  float embedding_multiplier = 1.0f, residual_multiplier = 1.0f, attention_multiplier = 1.0f;
  float logits_scaling = 1.0f;
  bool tied = false, rope = false, attention_bias = false;
  bool proj_bias = false;          // mamba_proj_bias: the Mamba2 in_proj and out_proj biases
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
  RECUR_ASSIGN_OR_RETURN(std::int64_t expand, c.get_int("mamba_expand", 2));
  RECUR_ASSIGN_OR_RETURN(g.proj_bias, c.get_bool("mamba_proj_bias", false));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{expand, "mamba_expand"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, g.n_layers, {}, {expand}));
  // mamba_d_head may be the string "auto": expand · hidden / heads (HF config). HF reads
  // time_step_limit when the config has it, else (0, inf): no clamp (mlx-lm defaults to
  // (0.001, 100); docs/model-granite.md).
  RECUR_ASSIGN_OR_RETURN(g.ssm, read_mamba2(c, g.n_layers, kMambaPrefixedKeys, expand * g.d_model,
                                            "mamba_expand x hidden_size"));
  return Status::ok();
}

Status parse_attention(const ConfigJson& c, GraniteConfig& g) {
  RECUR_ASSIGN_OR_RETURN(g.attn, read_attention_geometry(c, g.d_model, g.n_layers));
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
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, 10000.0));
  g.rope_theta = static_cast<float>(theta);
  if (g.rope) RECUR_RETURN_IF_ERROR(check_default_rope(c));
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
  RECUR_RETURN_IF_ERROR(check_activation(c, "hidden_act", "silu"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  g.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(g.embedding_multiplier, get_multiplier(c, "embedding_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.residual_multiplier, get_multiplier(c, "residual_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.attention_multiplier, get_multiplier(c, "attention_multiplier"));
  RECUR_ASSIGN_OR_RETURN(g.logits_scaling, get_multiplier(c, "logits_scaling"));
  RECUR_ASSIGN_OR_RETURN(g.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(g.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{g.d_model, "hidden_size"},
                                             {g.n_layers, "num_hidden_layers"},
                                             {g.vocab_size, "vocab_size"},
                                             {g.d_ff, "shared_intermediate_size"}}));
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, g.n_layers, {g.d_model, g.d_ff, g.vocab_size, g.moe_d_ff}, {}));
  RECUR_ASSIGN_OR_RETURN(g.is_attention, parse_schedule(c, g.n_layers));
  RECUR_RETURN_IF_ERROR(parse_mamba(c, g));
  RECUR_RETURN_IF_ERROR(parse_attention(c, g));
  return g;
}

// The shared MLP: Hugging Face's fused shared_mlp.input_linear / output_linear, or the split
// mlp.{gate,up,down}_proj of MLX conversions, whichever the checkpoint holds.
class SharedMlp final : public Mixer {
 public:
  explicit SharedMlp(std::int64_t d_ff)
      : fused_(d_ff, "shared_mlp.input_linear.weight", "shared_mlp.output_linear.weight"),
        split_(MlpW{}, d_ff) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    is_split_ = v.has_tensor(p + "mlp.gate_proj.weight");
    chosen().visit(v, p, d_model);
  }
  std::int64_t scratch_per_row() const override {
    return is_split_ ? split_.scratch_per_row() : fused_.scratch_per_row();
  }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    if (is_split_) {
      split_.forward(ctx, x, out);
    } else {
      fused_.forward(ctx, x, out);
    }
  }

 private:
  Mixer& chosen() { return is_split_ ? static_cast<Mixer&>(split_) : fused_; }

  FusedGluMixer fused_;
  GluMlpMixer split_;
  bool is_split_ = false;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_granite_hybrid(const ConfigJson& c,
                                                           const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(GraniteConfig g, parse_config(c));
  StackSpec s{.d_model = g.d_model,
              .vocab_size = g.vocab_size,
              .prefix = prefix,
              .embed_scale = g.embedding_multiplier,
              .final_norm = {.eps = g.eps},
              .tied = g.tied,
              .logits = {.divisor = g.logits_scaling}};
  // h = embedding · embedding_multiplier; per layer h += m · mixer(norm(h)); h += m · mlp(norm(h)),
  // mlp(x) = shared_mlp(x) + moe(x) in the MoE variants.
  for (std::int64_t i = 0; i < g.n_layers; ++i) {
    std::unique_ptr<Mixer> mixer;
    if (g.is_attention[static_cast<std::size_t>(i)]) {
      AttentionW attn = gqa_attention(g.attn, g.rope_theta, g.kv_dtype);
      if (!g.rope) attn.rotary_dim = 0;
      attn.scale = g.attention_multiplier;
      attn.bias = g.attention_bias;
      mixer = std::make_unique<AttentionMixer>(std::move(attn));
    } else {
      // transformers' GraniteMoeHybridRMSNormGated normalises the whole row whatever
      // mamba_n_groups (docs/model-granite.md).
      Mamba2W mamba = mamba2_weights(g.ssm, g.eps, "mamba.");
      mamba.norm_whole_row = true;
      mamba.proj_bias = g.proj_bias;
      mixer = std::make_unique<Mamba2Mixer>(std::move(mamba));
    }
    StackLayer l = mixer_ffn_layer({.eps = g.eps}, std::move(mixer),
                                   std::make_unique<SharedMlp>(g.d_ff), g.residual_multiplier);
    if (g.n_experts > 0) {
      // HF: block_sparse_moe.router.layer, input_linear [E, 2 * I, H] (gate rows first),
      // output_linear [E, H, I]; MLX: block_sparse_moe.switch_mlp.{gate,up,down}_proj. The
      // softmax over the top k logits is the renormalised softmax over all of them.
      MoeW moe{.n_experts = g.n_experts,
               .top_k = g.top_k,
               .d_ff = g.moe_d_ff,
               .norm_topk_prob = true,
               .names = {.module = "block_sparse_moe.",
                         .router = "router.layer.weight",
                         .fused_gate_up = "input_linear.weight",
                         .fused_down = "output_linear.weight",
                         .per_expert = false}};
      l.sublayers.back().mixers.push_back({.mixer = std::make_unique<MoeMixer>(std::move(moe))});
    }
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
