// Llama (LlamaForCausalLM, docs/model-llama.md): every layer is RMSNorm → GQA attention (no q/k
// norm, optional q/k/v/o biases, full RoPE, optionally llama3-scaled) → residual → RMSNorm →
// SwiGLU (optional biases) → residual; final RMSNorm; tied or separate head.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Llama3Scaling {
  double factor = 0.0, low_freq_factor = 0.0, high_freq_factor = 0.0, original_max_pos = 0.0;
};

struct LlamaConfig {
  std::int64_t d_model = 0, n_layers = 0, d_ff = 0, vocab_size = 0;
  AttentionGeometry attn;
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
  RECUR_ASSIGN_OR_RETURN(q.rope_theta, read_rope_theta(c, 10000.0));
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
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.mlp_bias, c.get_bool("mlp_bias", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(parse_rope(c, q));
  RECUR_RETURN_IF_ERROR(check_activation(c, "hidden_act", "silu"));
  q.eps = static_cast<float>(eps);
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.d_ff, "intermediate_size"},
                                             {q.vocab_size, "vocab_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  RECUR_ASSIGN_OR_RETURN(q.attn, read_attention_geometry(c, q.d_model, q.n_layers));
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
  std::vector<float> out(static_cast<std::size_t>(c.attn.head_dim / 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double f = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) /
                                                      static_cast<double>(c.attn.head_dim));
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

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_llama(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(LlamaConfig q, parse_config(c));
  const std::vector<float> inv_freq = q.llama3 ? llama3_inv_freq(q) : std::vector<float>{};
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    AttentionW attn = gqa_attention(q.attn, static_cast<float>(q.rope_theta), q.kv_dtype);
    attn.inv_freq = inv_freq;
    attn.bias = q.attention_bias;
    s.layers.push_back(
        mixer_ffn_layer({.eps = q.eps}, std::make_unique<AttentionMixer>(std::move(attn)),
                        std::make_unique<GluMlpMixer>(MlpW{.bias = q.mlp_bias}, q.d_ff)));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
