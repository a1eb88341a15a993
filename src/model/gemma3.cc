// Gemma 3 text (gemma3_text, and the text part of Gemma3ForConditionalGeneration;
// docs/model-gemma3.md): embeddings scaled by sqrt(hidden); per layer sandwich norms around
// attention and the GeGLU MLP; every norm is (1 + w) ⊙ RMSNorm(x); q/k norms; scores scaled by
// query_pre_attn_scalar^-½; sliding-window layers (a ring of `sliding_window` tokens, local RoPE
// base) interleaved with global ones (rope_theta, optionally linear-scaled); optional final logit
// softcapping.
#include <algorithm>
#include <cmath>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Gemma3Config {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0, window = 0;
  AttentionGeometry attn;
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
  // HF: layer i is global iff (i + 1) % sliding_window_pattern == 0 (default 6).
  RECUR_ASSIGN_OR_RETURN(std::int64_t pattern, c.get_int("sliding_window_pattern", 6));
  if (pattern <= 0 && !c.has("layer_types")) {
    return Error(StatusCode::kInvalidArgument, "{}: sliding_window_pattern must be positive",
                 c.file());
  }
  return read_sliding_layers(c, n_layers, pattern);
}

Result<Gemma3Config> parse_config(const ConfigJson& c) {
  Gemma3Config g;
  RECUR_ASSIGN_OR_RETURN(g.d_model, c.get_int("hidden_size", 2304));
  RECUR_ASSIGN_OR_RETURN(g.n_layers, c.get_int("num_hidden_layers", 26));
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
  RECUR_RETURN_IF_ERROR(check_activation(
      c, c.has("hidden_activation") ? "hidden_activation" : "hidden_act", "gelu_pytorch_tanh"));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{g.d_model, "hidden_size"},
                                             {g.n_layers, "num_hidden_layers"},
                                             {g.d_ff, "intermediate_size"},
                                             {g.vocab_size, "vocab_size"},
                                             {g.window, "sliding_window"}}));
  if (!(g.query_pre_attn_scalar > 0.0f) || g.final_softcap < 0.0f) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: query_pre_attn_scalar must be positive and final_logit_softcapping not "
                 "negative",
                 c.file());
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, g.n_layers, {g.d_model, g.d_ff, g.vocab_size}, {}));
  if (g.window > (1 << 20)) {
    return Error(StatusCode::kInvalidArgument, "{}: sliding_window {} is beyond 2^20 tokens",
                 c.file(), g.window);
  }
  RECUR_ASSIGN_OR_RETURN(g.attn,
                         read_attention_geometry(c, g.d_model, g.n_layers,
                                                 {.n_heads = 8, .n_kv_heads = 4, .head_dim = 256}));
  RECUR_ASSIGN_OR_RETURN(g.sliding, parse_schedule(c, g.n_layers));
  return g;
}

// HF's linear scaling of the global layers: inv_freq / factor, the rest as the default RoPE (f32).
std::vector<float> linear_inv_freq(const Gemma3Config& c) {
  std::vector<float> out;
  for (std::int64_t j = 0; j < c.attn.head_dim / 2; ++j) {
    const float inv = 1.0f / std::pow(c.global_theta, static_cast<float>(2 * j) /
                                                          static_cast<float>(c.attn.head_dim));
    out.push_back(inv / c.global_factor);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_gemma3(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Gemma3Config g, parse_config(c));
  // Every norm is (1 + w) ⊙ x̂ with w as trained, in HF and MLX files alike.
  const NormW norm{.eps = g.eps, .form = NormForm::kGemma};
  // sqrt(hidden_size) as HF multiplies it: a tensor cast to the embedding's dtype (bf16 turns
  // sqrt(1152) = 33.94 into 34), then an f32 product with the f32 activations.
  StackSpec s{.d_model = g.d_model,
              .vocab_size = g.vocab_size,
              .prefix = prefix,
              .embed_scale = static_cast<float>(std::sqrt(static_cast<double>(g.d_model))),
              .embed_scale_in_embedding_dtype = true,
              .final_norm = norm,
              .tied = g.tied,
              .logits = {.softcap = g.final_softcap}};
  for (std::int64_t i = 0; i < g.n_layers; ++i) {
    const bool sliding = g.sliding[static_cast<std::size_t>(i)];
    AttentionW attn{.q_norm = norm,
                    .k_norm = norm,
                    .n_heads = g.attn.n_heads,
                    .n_kv_heads = g.attn.n_kv_heads,
                    .head_dim = g.attn.head_dim,
                    .rotary_dim = g.attn.head_dim,
                    .rope_theta = sliding ? g.local_theta : g.global_theta,
                    .scale = 1.0f / std::sqrt(g.query_pre_attn_scalar),
                    .window = sliding ? g.window : 0,
                    .kv_dtype = g.kv_dtype};
    if (!sliding && g.global_factor != 1.0f) attn.inv_freq = linear_inv_freq(g);
    // h += post_attn_norm(attn(input_norm(h))); h += post_ff_norm(mlp(pre_ff_norm(h))).
    StackLayer l;
    l.sublayers.push_back(pre_norm("input_layernorm.weight", norm,
                                   std::make_unique<AttentionMixer>(std::move(attn))));
    l.sublayers.back().post_norm_name = "post_attention_layernorm.weight";
    l.sublayers.back().post_norm = norm;
    l.sublayers.push_back(
        pre_norm("pre_feedforward_layernorm.weight", norm,
                 std::make_unique<GluMlpMixer>(MlpW{}, g.d_ff, GluMlpMixer::Act::kGeluTanh)));
    l.sublayers.back().post_norm_name = "post_feedforward_layernorm.weight";
    l.sublayers.back().post_norm = norm;
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
