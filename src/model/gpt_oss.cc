// gpt-oss (GptOssForCausalLM, docs/model-gpt-oss.md): pre-norm layers of GQA attention with
// biases, a learned sink logit per head and YaRN RoPE, on alternating sliding-window (128) and full
// layers; then a mixture of experts whose router has a bias and a softmax over the top k logits,
// and whose experts are SwiGLUs with biases and gpt-oss's clamped activation, released in MXFP4.
// Final plain RMSNorm; separate head.
#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct GptOssConfig {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0;
  std::int64_t n_experts = 0, top_k = 0, window = 0;
  AttentionGeometry attn;
  std::vector<bool> sliding;
  float eps = 1e-5f, swiglu_limit = 7.0f;
  double rope_theta = 150000.0;
  RopeTable rope;  // empty inv_freq: plain RoPE
  bool tied = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// GptOssExperts' alpha: a constant of the model code, not of config.json.
constexpr float kSwigluAlpha = 1.702f;

Result<GptOssConfig> parse_config(const ConfigJson& c) {
  GptOssConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_experts, get_int_any(c, {"num_local_experts", "num_experts"}, 0));
  RECUR_ASSIGN_OR_RETURN(q.top_k, get_int_any(c, {"num_experts_per_tok", "experts_per_token"}, 0));
  RECUR_ASSIGN_OR_RETURN(q.window, c.get_int("sliding_window", 128));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-5));
  RECUR_ASSIGN_OR_RETURN(double limit, c.get_float("swiglu_limit", 7.0));
  RECUR_ASSIGN_OR_RETURN(q.rope_theta, read_rope_theta(c, 150000.0));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_activation(c, "hidden_act", "silu"));
  // GptOssAttention's projections always have biases; a config saying otherwise is not gpt-oss.
  RECUR_ASSIGN_OR_RETURN(bool attention_bias, c.get_bool("attention_bias", true));
  if (!attention_bias) {
    return Error(StatusCode::kUnimplemented,
                 "{}: attention_bias false is not supported (gpt-oss's "
                 "attention has biases)",
                 c.file());
  }
  q.eps = static_cast<float>(eps);
  q.swiglu_limit = static_cast<float>(limit);
  if (!(limit > 0.0)) {
    return Error(StatusCode::kInvalidArgument, "{}: swiglu_limit must be positive", c.file());
  }
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.d_ff, "intermediate_size"},
                                             {q.vocab_size, "vocab_size"},
                                             {q.window, "sliding_window"}}));
  RECUR_RETURN_IF_ERROR(check_expert_counts(c, q.n_experts, q.top_k));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  // MXFP4 blocks hold 32 inputs: the experts' widths must be whole blocks.
  if (q.d_model % 32 != 0 || q.d_ff % 32 != 0) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: hidden_size {} and intermediate_size {} must be multiples of 32 (MXFP4 "
                 "blocks of the experts)",
                 c.file(), q.d_model, q.d_ff);
  }
  RECUR_ASSIGN_OR_RETURN(q.attn, read_attention_geometry(c, q.d_model, q.n_layers));
  // GptOssConfig's default: layer i slides when i is even.
  RECUR_ASSIGN_OR_RETURN(q.sliding, read_sliding_layers(c, q.n_layers, 2));
  RECUR_ASSIGN_OR_RETURN(const RopeType rope, read_rope_type(c));
  if (rope.type == "yarn") {
    RECUR_ASSIGN_OR_RETURN(q.rope, read_yarn(c, q.rope_theta, q.attn.head_dim));
  } else if (rope.type != "default") {
    return Error(StatusCode::kUnimplemented,
                 "{}: {}.rope_type '{}' is not supported (gpt_oss: 'yarn' or 'default')", c.file(),
                 rope.group, rope.type);
  }
  return q;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_gpt_oss(const ConfigJson& c,
                                                    const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(GptOssConfig q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    AttentionW attn = gqa_attention(q.attn, static_cast<float>(q.rope_theta), q.kv_dtype);
    attn.inv_freq = q.rope.inv_freq;
    attn.rope_attention_factor = q.rope.attention_factor;
    attn.bias = true;
    attn.sinks = true;
    if (q.sliding[static_cast<std::size_t>(i)]) attn.window = q.window;
    MoeW moe{
        .n_experts = q.n_experts,
        .top_k = q.top_k,
        .d_ff = q.d_ff,
        .score = RouterRule::Score::kSoftmaxOfTopK,
        .names = {.router = "router.weight", .router_bias = "router.bias", .interleaved = true},
        .clamped = {.alpha = kSwigluAlpha, .limit = q.swiglu_limit}};
    s.layers.push_back(mixer_ffn_layer({.eps = q.eps},
                                       std::make_unique<AttentionMixer>(std::move(attn)),
                                       std::make_unique<MoeMixer>(std::move(moe))));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
