// SmolLM3 (SmolLM3ForCausalLM, docs/model-smollm3.md): Llama's layer - RMSNorm → GQA attention
// (no q/k norm, optional q/k/v/o biases, full default RoPE) → residual → RMSNorm → SwiGLU
// (optional biases) → residual - with RoPE switched off on the NoPE layers (no_rope_layers[i] ==
// 0, by default every 4th layer) and an optional sliding window; final RMSNorm; tied head by
// default.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct SmolLm3Config {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0, window = 0;
  AttentionGeometry attn;
  std::vector<bool> rope;     // per layer: RoPE (true) or NoPE
  std::vector<bool> sliding;  // per layer: attends in `window`
  float eps = 1e-6f;
  double rope_theta = 2e6;
  bool tied = true, attention_bias = false, mlp_bias = false;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// SmolLM3Config turns an explicit null num_key_value_heads into num_attention_heads, while an
// absent one takes the class default 4; ConfigJson reads null as absent, so look at the text.
bool explicit_null(const ConfigJson& c, const char* key) {
  const nlohmann::json j = nlohmann::json::parse(c.canonical(), nullptr, false);
  for (const nlohmann::json* base : {&j, j.contains("text_config") ? &j["text_config"] : nullptr}) {
    if (base != nullptr && base->is_object() && base->contains(key) && (*base)[key].is_null()) {
      return true;
    }
  }
  return false;
}

// no_rope_layers (1 = RoPE, 0 = NoPE), else no_rope_layer_interval's pattern: layer i is NoPE
// when (i + 1) % interval == 0.
Result<std::vector<bool>> read_rope_layers(const ConfigJson& c, std::int64_t n_layers) {
  std::vector<bool> rope;
  if (c.has("no_rope_layers")) {
    RECUR_ASSIGN_OR_RETURN(const std::vector<std::int64_t> flags, c.get_int_list("no_rope_layers"));
    if (static_cast<std::int64_t>(flags.size()) < n_layers) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: no_rope_layers has {} entries for {} layers (num_hidden_layers)", c.file(),
                   flags.size(), n_layers);
    }
    for (std::int64_t i = 0; i < n_layers; ++i) {
      rope.push_back(flags[static_cast<std::size_t>(i)] != 0);
    }
    return rope;
  }
  RECUR_ASSIGN_OR_RETURN(const std::int64_t interval, c.get_int("no_rope_layer_interval", 4));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{interval, "no_rope_layer_interval"}}));
  for (std::int64_t i = 0; i < n_layers; ++i) rope.push_back((i + 1) % interval != 0);
  return rope;
}

// use_sliding_window gates everything; layer_types, when given, says which layers slide (checked
// as read_sliding_layers checks it), else the NoPE layers do when sliding_window is set.
Status read_sliding(const ConfigJson& c, SmolLm3Config& q) {
  q.sliding.assign(static_cast<std::size_t>(q.n_layers), false);
  RECUR_ASSIGN_OR_RETURN(const bool use, c.get_bool("use_sliding_window", false));
  std::vector<bool> types;
  if (c.has("layer_types")) {
    RECUR_ASSIGN_OR_RETURN(types, read_sliding_layers(c, q.n_layers, 1));
  }
  if (!use) return Status::ok();
  const bool window_set = c.has("sliding_window");
  if (window_set) {
    RECUR_ASSIGN_OR_RETURN(q.window, c.get_int("sliding_window"));
  }
  for (std::size_t i = 0; i < q.sliding.size(); ++i) {
    q.sliding[i] = c.has("layer_types") ? static_cast<bool>(types[i]) : window_set && !q.rope[i];
  }
  const bool any = std::find(q.sliding.begin(), q.sliding.end(), true) != q.sliding.end();
  if (any && !window_set) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: sliding_window is null but use_sliding_window and layer_types ask for "
                 "sliding_attention layers",
                 c.file());
  }
  if (any) {
    RECUR_RETURN_IF_ERROR(require_positive(c, {{q.window, "sliding_window"}}));
  }
  return Status::ok();
}

Result<SmolLm3Config> parse_config(const ConfigJson& c) {
  SmolLm3Config q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size", 2048));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers", 36));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size", 11008));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size", 128256));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", true));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.mlp_bias, c.get_bool("mlp_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_ASSIGN_OR_RETURN(q.rope_theta, read_rope_theta(c, 2e6));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  RECUR_RETURN_IF_ERROR(check_activation(c, "hidden_act", "silu"));
  q.eps = static_cast<float>(eps);
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.d_ff, "intermediate_size"},
                                             {q.vocab_size, "vocab_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  RECUR_ASSIGN_OR_RETURN(q.rope, read_rope_layers(c, q.n_layers));
  const bool any_rope = std::find(q.rope.begin(), q.rope.end(), true) != q.rope.end();
  RECUR_ASSIGN_OR_RETURN(
      q.attn, read_attention_geometry(
                  c, q.d_model, q.n_layers,
                  {.n_heads = 16,
                   .n_kv_heads = explicit_null(c, "num_key_value_heads") ? 0 : std::int64_t{4},
                   .rotary = any_rope}));
  RECUR_RETURN_IF_ERROR(read_sliding(c, q));
  return q;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_smollm3(const ConfigJson& c,
                                                    const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(SmolLm3Config q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    const auto l = static_cast<std::size_t>(i);
    AttentionW attn = gqa_attention(q.attn, static_cast<float>(q.rope_theta), q.kv_dtype);
    attn.bias = q.attention_bias;
    if (!q.rope[l]) attn.rotary_dim = 0;  // NoPE: keys cached unrotated
    if (q.sliding[l]) attn.window = q.window;
    s.layers.push_back(
        mixer_ffn_layer({.eps = q.eps}, std::make_unique<AttentionMixer>(std::move(attn)),
                        std::make_unique<GluMlpMixer>(MlpW{.bias = q.mlp_bias}, q.d_ff)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
