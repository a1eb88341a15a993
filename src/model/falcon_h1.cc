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

#include "model/blocks.h"
#include "model/mlp_variants.h"

namespace recur::model {

namespace {

struct FalconConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t ssm_heads = 0, ssm_head_dim = 0, ssm_state = 0, ssm_groups = 0, conv_kernel = 0;
  float eps = 1e-5f, rope_theta = 10000.0f;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();
  bool tied = false, conv_bias = true, attention_bias = false, mlp_bias = false;
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

Status refuse_true(const ConfigJson& c, const char* key, const char* what) {
  RECUR_ASSIGN_OR_RETURN(bool on, c.get_bool(key, false));
  if (!on) return Status::ok();
  return Error(StatusCode::kUnimplemented, "{}: {}=true ({}) is not supported", c.file(), key,
               what);
}

Status parse_mamba(const ConfigJson& c, FalconConfig& f) {
  RECUR_ASSIGN_OR_RETURN(std::int64_t expand, c.get_int("mamba_expand", 2));
  // HF: mamba_d_ssm null means mamba_expand · hidden_size (recur also reads an absent key so,
  // where HF's class default 1024 would apply; docs/model-falcon-h1.md).
  RECUR_ASSIGN_OR_RETURN(std::int64_t d_ssm, c.get_int("mamba_d_ssm", expand * f.d_model));
  RECUR_ASSIGN_OR_RETURN(f.ssm_heads, c.get_int("mamba_n_heads", 128));
  f.ssm_head_dim = f.ssm_heads > 0 ? d_ssm / f.ssm_heads : 0;  // "auto"
  if (c.has("mamba_d_head")) {
    auto text = c.get_string("mamba_d_head");
    if (!text.is_ok() || *text != "auto") {
      RECUR_ASSIGN_OR_RETURN(f.ssm_head_dim, c.get_int("mamba_d_head"));
    }
  }
  RECUR_ASSIGN_OR_RETURN(f.ssm_state, c.get_int("mamba_d_state", 256));
  RECUR_ASSIGN_OR_RETURN(f.ssm_groups, c.get_int("mamba_n_groups", 1));
  RECUR_ASSIGN_OR_RETURN(f.conv_kernel, c.get_int("mamba_d_conv", 4));
  RECUR_ASSIGN_OR_RETURN(f.conv_bias, c.get_bool("mamba_conv_bias", true));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "mamba_proj_bias", "an in_proj bias"));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "projectors_bias", "an out_proj bias"));
  RECUR_ASSIGN_OR_RETURN(bool rms_norm, c.get_bool("mamba_rms_norm", false));
  RECUR_ASSIGN_OR_RETURN(bool before, c.get_bool("mamba_norm_before_gate", true));
  f.gate = !rms_norm ? Mamba2W::Gate::kNoNorm
           : before  ? Mamba2W::Gate::kNormBeforeGate
                     : Mamba2W::Gate::kNormAfterGate;
  if (c.has("time_step_limit")) {
    RECUR_ASSIGN_OR_RETURN(auto lim, c.get_floats("time_step_limit"));
    if (lim.size() != 2 || !(lim[0] <= lim[1])) {
      return Error(StatusCode::kInvalidArgument, "{}: time_step_limit must be [min, max]",
                   c.file());
    }
    f.dt_min = static_cast<float>(lim[0]);
    f.dt_max = static_cast<float>(lim[1]);
  }
  for (auto [v, name] : {std::pair{f.ssm_heads, "mamba_n_heads"},
                         {f.ssm_head_dim, "mamba_d_head"},
                         {f.ssm_state, "mamba_d_state"},
                         {f.ssm_groups, "mamba_n_groups"},
                         {f.conv_kernel, "mamba_d_conv"},
                         {d_ssm, "mamba_d_ssm"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, f.n_layers, {d_ssm},
                        {f.ssm_heads, f.ssm_head_dim, f.ssm_state, f.ssm_groups, f.conv_kernel}));
  if (f.ssm_heads * f.ssm_head_dim != d_ssm || f.ssm_heads % f.ssm_groups != 0) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: mamba_n_heads {} x mamba_d_head {} must equal mamba_d_ssm {}, and "
                 "mamba_n_heads must be a multiple of mamba_n_groups {}",
                 c.file(), f.ssm_heads, f.ssm_head_dim, d_ssm, f.ssm_groups);
  }
  return Status::ok();
}

Status parse_attention(const ConfigJson& c, FalconConfig& f) {
  RECUR_ASSIGN_OR_RETURN(f.n_heads, c.get_int("num_attention_heads", 32));
  RECUR_ASSIGN_OR_RETURN(f.n_kv_heads, c.get_int("num_key_value_heads", f.n_heads));
  RECUR_ASSIGN_OR_RETURN(f.head_dim,
                         c.get_int("head_dim", f.n_heads > 0 ? f.d_model / f.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(f.attention_bias, c.get_bool("attention_bias", false));
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", 10000.0));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  f.rope_theta = static_cast<float>(theta);
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  for (auto [v, name] : {std::pair{f.n_heads, "num_attention_heads"},
                         {f.n_kv_heads, "num_key_value_heads"},
                         {f.head_dim, "head_dim"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  if (f.n_heads % f.n_kv_heads != 0 || f.head_dim % 2 != 0 || f.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), f.n_heads, f.n_kv_heads, f.head_dim);
  }
  return Status::ok();
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
  if (c.has("hidden_act")) {
    RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string("hidden_act"));
    if (act != "silu") {
      return Error(StatusCode::kUnimplemented, "{}: hidden_act '{}' is not supported (only silu)",
                   c.file(), act);
    }
  }
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-5));
  f.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(f.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(f.mlp_bias, c.get_bool("mlp_bias", false));
  RECUR_ASSIGN_OR_RETURN(f.kv_dtype, kv_dtype_from_config(c));
  for (auto [v, name] : {std::pair{f.d_model, "hidden_size"},
                         {f.n_layers, "num_hidden_layers"},
                         {f.vocab_size, "vocab_size"},
                         {f.d_ff, "intermediate_size"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
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

struct FalconLayer {
  NormW input_norm, pre_ff_norm;
  AttentionW attn;
  Mamba2W mamba;
  MlpW mlp;
};

class FalconH1 final : public FamilyModel {
 public:
  FalconH1(const FalconConfig& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    const float a = c.attention_in;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      FalconLayer& l = layers_[i];
      l.input_norm.eps = l.pre_ff_norm.eps = c.eps;
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = c.rope_theta,
                .scale = a * a * c.key / std::sqrt(static_cast<float>(c.head_dim)),
                .qk_norm = false,
                .bias = c.attention_bias,
                .kv_dtype = c.kv_dtype,
                .layer = 2 * i};
      l.mamba = {.norm = {.eps = c.eps},
                 .n_heads = c.ssm_heads,
                 .head_dim = c.ssm_head_dim,
                 .d_state = c.ssm_state,
                 .n_groups = c.ssm_groups,
                 .conv_kernel = c.conv_kernel,
                 .dt_min = c.dt_min,
                 .dt_max = c.dt_max,
                 .conv_bias_present = c.conv_bias,
                 .layer = 2 * i + 1,
                 .module = "mamba.",
                 .gate = c.gate};
      l.mamba.in_scale = in_scale(c, l.mamba);
      l.mlp = {.bias = c.mlp_bias, .gate_scale = c.mlp_gate, .module = "feed_forward."};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }
  std::int64_t n_layers() const override { return c_.n_layers; }

  // Every layer holds both kinds of state, as two entries of the layout: its attention's K/V at
  // 2i, its mixer's recurrent state and conv window at 2i + 1.
  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) {
      s.layers.push_back(attention_state(l.attn));
      s.layers.push_back(mamba2_state(l.mamba));
    }
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      FalconLayer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "input_layernorm.weight", c_.d_model, &l.input_norm);
      visit_mamba2(v, p, c_.d_model, &l.mamba);
      visit_attention(v, p, c_.d_model, &l.attn);
      visit_norm(v, p + "pre_ff_layernorm.weight", c_.d_model, &l.pre_ff_norm);
      visit_mlp(v, p, c_.d_model, c_.d_ff, &l.mlp);
    }
    visit_norm(v, p_ + "final_layernorm.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t need = 0;
    for (const auto& l : layers_) {
      need = std::max({need, mlp_scratch_per_row(l.mlp), attention_scratch_per_row(l.attn),
                       mamba2_scratch_per_row(l.mamba)});
    }
    return 3 * c_.d_model + need;
  }

  // h = embedding · m_e; per layer x = norm(h), h += mixer(x) · m_ssm_out + attn(x · a) ·
  // m_attn_out, h += mlp(norm(h)) · m_down.
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (std::int64_t i = 0; i < n * d; ++i) h[i] *= c_.embedding;
    const float attn_out = c_.attention_in * c_.attention_out;
    for (const FalconLayer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* m = ctx.scratch->take(n * d);
      float* a = ctx.scratch->take(n * d);
      apply_norm(l.input_norm, h, x, n, d);
      mamba2_block(ctx, l.mamba, x, m);
      attention_block(ctx, l.attn, x, a);
      for (std::int64_t i = 0; i < n * d; ++i) h[i] += m[i] * c_.ssm_out + a[i] * attn_out;
      apply_norm(l.pre_ff_norm, h, x, n, d);
      swiglu_mlp(ctx, l.mlp, x, m);
      add_scaled(h, m, c_.mlp_down, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  void finish_logits(float* logits, std::int64_t n_rows) const override {
    if (c_.lm_head == 1.0f) return;
    for (std::int64_t i = 0; i < n_rows * c_.vocab_size; ++i) logits[i] *= c_.lm_head;
  }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }
  // mamba2_block records captures; the attention beside it needs none.
  bool supports_capture() const override { return true; }

 private:
  FalconConfig c_;
  std::string p_;
  std::vector<FalconLayer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_falcon_h1(const ConfigJson& c,
                                                      const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(FalconConfig f, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<FalconH1>(f, prefix));
}

}  // namespace recur::model
