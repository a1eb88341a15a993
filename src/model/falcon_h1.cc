// TII Falcon-H1 (model_type falcon_h1, docs/model-falcon-h1.md): every layer runs a Mamba2 mixer
// and GQA attention side by side on the same RMSNorm'd input and adds both to the residual, then a
// SwiGLU MLP; muP multipliers scale the embedding, the logits, both branches' inputs and outputs,
// the keys, the MLP's gate and output, and each segment of the mixer's in_proj output.
//
// The multipliers that sit on a linear map are moved to where they cost least: the attention's
// input multiplier a and key multiplier k_m become the score scale (hd^-½ · a² · k_m, RoPE being
// linear) and an output factor a (v is linear in the input); ssm_in_multiplier joins the per-column
// mup vector after in_proj. The float64 reference (tests/model/reference_falcon_h1.cc) applies
// them where HF does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct FalconConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  AttentionGeometry attn;
  Mamba2Geometry ssm;
  float eps = 1e-5f, rope_theta = 10000.0f;
  bool tied = false, attention_bias = false, mlp_bias = false;
  Mamba2W::Gate gate = Mamba2W::Gate::kNoNorm;
  // muP
  float embedding = 1.0f, lm_head = 1.0f, key = 1.0f, attention_in = 1.0f, attention_out = 1.0f;
  float ssm_in = 1.0f, ssm_out = 1.0f, mlp_gate = 1.0f, mlp_down = 1.0f;
  std::vector<float> ssm_segments = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};  // z, x, B, C, dt
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

Result<float> multiplier(const ConfigJson& c, const char* key) {
  RECUR_ASSIGN_OR_RETURN(double v, c.get_float(key, 1.0));
  if (!std::isfinite(v) || v == 0.0) {
    return Error(StatusCode::kInvalidArgument, "{}: {} must be finite and non-zero, got {}",
                 c.file(), key, v);
  }
  return static_cast<float>(v);
}

// A list multiplier of `n` finite non-zero values (absent or null: all 1, as HF's __post_init__).
Result<std::vector<float>> multipliers(const ConfigJson& c, const char* key, std::size_t n) {
  std::vector<float> out(n, 1.0f);
  if (!c.has(key)) return out;
  RECUR_ASSIGN_OR_RETURN(auto v, c.get_floats(key));
  if (v.size() != n) {
    return Error(StatusCode::kInvalidArgument, "{}: {} must hold {} values, got {}", c.file(), key,
                 n, v.size());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i]) || v[i] == 0.0) {
      return Error(StatusCode::kInvalidArgument, "{}: {}[{}] must be finite and non-zero, got {}",
                   c.file(), key, i, v[i]);
    }
    out[i] = static_cast<float>(v[i]);
  }
  return out;
}

Status parse_mamba(const ConfigJson& c, FalconConfig& f) {
  RECUR_ASSIGN_OR_RETURN(std::int64_t expand, c.get_int("mamba_expand", 2));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{expand, "mamba_expand"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, f.n_layers, {}, {expand}));
  // HF: mamba_d_ssm null means mamba_expand · hidden_size (recur also reads an absent key so,
  // where HF's class default 1024 would apply; docs/model-falcon-h1.md).
  RECUR_ASSIGN_OR_RETURN(std::int64_t d_ssm, c.get_int("mamba_d_ssm", expand * f.d_model));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{d_ssm, "mamba_d_ssm"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, f.n_layers, {d_ssm}, {}));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "mamba_proj_bias", "an in_proj bias"));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "projectors_bias", "an out_proj bias"));
  RECUR_ASSIGN_OR_RETURN(bool rms_norm, c.get_bool("mamba_rms_norm", false));
  RECUR_ASSIGN_OR_RETURN(bool before, c.get_bool("mamba_norm_before_gate", true));
  f.gate = !rms_norm ? Mamba2W::Gate::kNoNorm
           : before  ? Mamba2W::Gate::kNormBeforeGate
                     : Mamba2W::Gate::kNormAfterGate;
  RECUR_ASSIGN_OR_RETURN(f.ssm,
                         read_mamba2(c, f.n_layers, kMambaPrefixedKeys, d_ssm, "mamba_d_ssm"));
  return Status::ok();
}

Status parse_attention(const ConfigJson& c, FalconConfig& f) {
  RECUR_ASSIGN_OR_RETURN(f.attn,
                         read_attention_geometry(c, f.d_model, f.n_layers, {.n_heads = 32}));
  RECUR_ASSIGN_OR_RETURN(f.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, 10000.0));
  f.rope_theta = static_cast<float>(theta);
  return check_default_rope(c);
}

Status parse_multipliers(const ConfigJson& c, FalconConfig& f) {
  RECUR_ASSIGN_OR_RETURN(f.embedding, multiplier(c, "embedding_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.lm_head, multiplier(c, "lm_head_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.key, multiplier(c, "key_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.attention_in, multiplier(c, "attention_in_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.attention_out, multiplier(c, "attention_out_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.ssm_in, multiplier(c, "ssm_in_multiplier"));
  RECUR_ASSIGN_OR_RETURN(f.ssm_out, multiplier(c, "ssm_out_multiplier"));
  RECUR_ASSIGN_OR_RETURN(auto mlp, multipliers(c, "mlp_multipliers", 2));
  f.mlp_gate = mlp[0];
  f.mlp_down = mlp[1];
  RECUR_ASSIGN_OR_RETURN(f.ssm_segments, multipliers(c, "ssm_multipliers", 5));
  return Status::ok();
}

Result<FalconConfig> parse_config(const ConfigJson& c) {
  FalconConfig f;
  RECUR_ASSIGN_OR_RETURN(f.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(f.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(f.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(f.d_ff, c.get_int("intermediate_size", 14336));
  RECUR_RETURN_IF_ERROR(check_activation(c, "hidden_act", "silu"));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-5));
  f.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(f.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(f.mlp_bias, c.get_bool("mlp_bias", false));
  RECUR_ASSIGN_OR_RETURN(f.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{f.d_model, "hidden_size"},
                                             {f.n_layers, "num_hidden_layers"},
                                             {f.vocab_size, "vocab_size"},
                                             {f.d_ff, "intermediate_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, f.n_layers, {f.d_model, f.d_ff, f.vocab_size}, {}));
  RECUR_RETURN_IF_ERROR(parse_mamba(c, f));
  RECUR_RETURN_IF_ERROR(parse_attention(c, f));
  RECUR_RETURN_IF_ERROR(parse_multipliers(c, f));
  return f;
}

// The mup vector (HF compute_mup_vector) times ssm_in_multiplier, per in_proj output column:
// [z d_ssm | x d_ssm | B G·N | C G·N | dt H].
std::vector<float> in_scale(const FalconConfig& f, const Mamba2W& m) {
  const std::int64_t di = m.d_inner(), gn = m.n_groups * m.d_state;
  const std::int64_t ends[] = {di, 2 * di, 2 * di + gn, 2 * di + 2 * gn, m.in_width()};
  std::vector<float> s(static_cast<std::size_t>(m.in_width()));
  std::int64_t seg = 0;
  for (std::int64_t j = 0; j < m.in_width(); ++j) {
    while (j >= ends[seg]) ++seg;
    s[static_cast<std::size_t>(j)] = f.ssm_segments[static_cast<std::size_t>(seg)] * f.ssm_in;
  }
  if (std::all_of(s.begin(), s.end(), [](float v) { return v == 1.0f; })) s.clear();
  return s;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_falcon_h1(const ConfigJson& c,
                                                      const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(FalconConfig f, parse_config(c));
  StackSpec s{.d_model = f.d_model,
              .vocab_size = f.vocab_size,
              .prefix = prefix,
              .embed_scale = f.embedding,
              .final_norm_name = "final_layernorm.weight",
              .final_norm = {.eps = f.eps},
              .tied = f.tied,
              .logits = {.multiplier = f.lm_head}};
  const float a = f.attention_in;
  // h = embedding · m_e; per layer x = norm(h), h += mixer(x) · m_ssm_out + attn(x · a) ·
  // m_attn_out, h += mlp(norm(h)) · m_down.
  for (std::int64_t i = 0; i < f.n_layers; ++i) {
    Mamba2W mamba = mamba2_weights(f.ssm, f.eps, "mamba.");
    mamba.gate = f.gate;
    mamba.in_scale = in_scale(f, mamba);
    AttentionW attn = gqa_attention(f.attn, f.rope_theta, f.kv_dtype);
    attn.scale = a * a * f.key / std::sqrt(static_cast<float>(f.attn.head_dim));
    attn.bias = f.attention_bias;
    Sublayer mixers{.norm_name = "input_layernorm.weight", .norm = {.eps = f.eps}};
    mixers.mixers.push_back(
        {.mixer = std::make_unique<Mamba2Mixer>(std::move(mamba)), .scale = f.ssm_out});
    mixers.mixers.push_back({.mixer = std::make_unique<AttentionMixer>(std::move(attn)),
                             .scale = f.attention_in * f.attention_out});
    StackLayer l;
    l.sublayers.push_back(std::move(mixers));
    l.sublayers.push_back(pre_norm(
        "pre_ff_layernorm.weight", {.eps = f.eps},
        std::make_unique<GluMlpMixer>(
            MlpW{.bias = f.mlp_bias, .gate_scale = f.mlp_gate, .module = "feed_forward."}, f.d_ff),
        f.mlp_down));
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
