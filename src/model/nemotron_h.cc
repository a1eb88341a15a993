// NVIDIA Nemotron-H (model_type nemotron_h, docs/model-nemotron-h.md): a stack of single-mixer
// blocks, h += mixer(RMSNorm(h)), the mixer of block i named by hybrid_override_pattern[i]: "M"
// Mamba2 (gated norm per group), "*" GQA attention without positions (no RoPE), "-" ReLU² MLP.
// Final RMSNorm norm_f; separate head unless tied. "E" (mixture-of-experts) blocks are refused.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/blocks.h"
#include "model/mlp_variants.h"

namespace recur::model {

namespace {

enum class Block : std::uint8_t { kMamba, kAttention, kMlp };

struct NemotronHConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t ssm_heads = 0, ssm_head_dim = 0, ssm_state = 0, ssm_groups = 0, conv_kernel = 0;
  float eps = 1e-5f;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();
  bool tied = false, conv_bias = true, attention_bias = false;
  std::vector<Block> blocks;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// One character or name per block: M / mamba / linear_attention, * / attention / full_attention,
// - / mlp, E / moe (refused).
Result<Block> block_of(const ConfigJson& c, std::string_view key, std::string_view type) {
  if (type == "M" || type == "mamba" || type == "linear_attention") return Block::kMamba;
  if (type == "*" || type == "attention" || type == "full_attention") return Block::kAttention;
  if (type == "-" || type == "mlp") return Block::kMlp;
  if (type == "E" || type == "moe") {
    return Error(StatusCode::kUnimplemented,
                 "{}: {} has a mixture-of-experts block ('{}'): the MoE Nemotron models are not "
                 "supported",
                 c.file(), key, type);
  }
  return Error(StatusCode::kInvalidArgument,
               "{}: {} holds '{}' (blocks are M, *, - or mamba, attention, mlp)", c.file(), key,
               type);
}

// hybrid_override_pattern (the released configs), else layers_block_type / layer_types
// (transformers 5); its length is the layer count, as in HF and mlx-lm.
Result<std::vector<Block>> parse_pattern(const ConfigJson& c) {
  std::vector<Block> out;
  if (c.has("hybrid_override_pattern")) {
    RECUR_ASSIGN_OR_RETURN(std::string p, c.get_string("hybrid_override_pattern"));
    for (char ch : p) {
      RECUR_ASSIGN_OR_RETURN(Block b, block_of(c, "hybrid_override_pattern", {&ch, 1}));
      out.push_back(b);
    }
  } else {
    const char* key = c.has("layers_block_type") ? "layers_block_type" : "layer_types";
    if (!c.has(key)) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: nemotron_h needs hybrid_override_pattern or layers_block_type", c.file());
    }
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings(key));
    for (const auto& t : types) {
      RECUR_ASSIGN_OR_RETURN(Block b, block_of(c, key, t));
      out.push_back(b);
    }
  }
  if (out.empty()) {
    return Error(StatusCode::kInvalidArgument, "{}: the block pattern is empty", c.file());
  }
  return out;
}

// The first of `keys` the config has (older remote-code names, then transformers 5's).
Result<std::int64_t> get_int_any(const ConfigJson& c, std::initializer_list<const char*> keys,
                                 std::int64_t fallback) {
  for (const char* k : keys) {
    if (c.has(k)) return c.get_int(k);
  }
  return fallback;
}

Status check_activation(const ConfigJson& c, const char* key, std::string_view want) {
  if (!c.has(key)) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string(key));
  if (act == want) return Status::ok();
  return Error(StatusCode::kUnimplemented, "{}: {} '{}' is not supported (only {})", c.file(), key,
               act, want);
}

Status parse_mamba(const ConfigJson& c, NemotronHConfig& q) {
  RECUR_ASSIGN_OR_RETURN(q.ssm_heads, c.get_int("mamba_num_heads", 128));
  RECUR_ASSIGN_OR_RETURN(q.ssm_head_dim, c.get_int("mamba_head_dim", 64));
  RECUR_ASSIGN_OR_RETURN(q.ssm_state, c.get_int("ssm_state_size", 128));
  RECUR_ASSIGN_OR_RETURN(q.ssm_groups, get_int_any(c, {"n_groups", "mamba_n_groups"}, 8));
  RECUR_ASSIGN_OR_RETURN(q.conv_kernel, get_int_any(c, {"conv_kernel", "mamba_d_conv"}, 4));
  const char* conv_bias_key = c.has("use_conv_bias") ? "use_conv_bias" : "mamba_conv_bias";
  RECUR_ASSIGN_OR_RETURN(q.conv_bias, c.get_bool(conv_bias_key, true));
  RECUR_ASSIGN_OR_RETURN(bool proj_bias, c.get_bool("mamba_proj_bias", false));
  RECUR_ASSIGN_OR_RETURN(bool use_bias, c.get_bool("use_bias", false));
  if (proj_bias || use_bias) {
    return Error(
        StatusCode::kUnimplemented,
        "{}: mamba_proj_bias / use_bias = true (Mamba2 projection biases) is not supported",
        c.file());
  }
  RECUR_RETURN_IF_ERROR(check_activation(c, "mamba_hidden_act", "silu"));
  for (const char* key : {"time_step_limit", "mamba_dt_limit"}) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(auto lim, c.get_floats(key));
    if (lim.size() != 2 || !(lim[0] <= lim[1])) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be [min, max]", c.file(), key);
    }
    q.dt_min = static_cast<float>(lim[0]);
    q.dt_max = static_cast<float>(lim[1]);
    break;
  }
  for (auto [v, name] : {std::pair{q.ssm_heads, "mamba_num_heads"},
                         {q.ssm_head_dim, "mamba_head_dim"},
                         {q.ssm_state, "ssm_state_size"},
                         {q.ssm_groups, "n_groups"},
                         {q.conv_kernel, "conv_kernel"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {q.ssm_heads * q.ssm_head_dim},
                        {q.ssm_heads, q.ssm_head_dim, q.ssm_state, q.ssm_groups, q.conv_kernel}));
  if (q.ssm_heads % q.ssm_groups != 0) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: mamba_num_heads {} must be a multiple of n_groups {}", c.file(), q.ssm_heads,
                 q.ssm_groups);
  }
  return Status::ok();
}

Status parse_attention(const ConfigJson& c, NemotronHConfig& q) {
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads", 32));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", q.n_heads));
  RECUR_ASSIGN_OR_RETURN(q.head_dim, get_int_any(c, {"head_dim", "attention_head_dim"},
                                                 q.n_heads > 0 ? q.d_model / q.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  for (auto [v, name] : {std::pair{q.n_heads, "num_attention_heads"},
                         {q.n_kv_heads, "num_key_value_heads"},
                         {q.head_dim, "head_dim"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {}, {q.n_heads, q.n_kv_heads, q.head_dim}));
  if (q.n_heads % q.n_kv_heads != 0 || q.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), q.n_heads, q.n_kv_heads, q.head_dim);
  }
  return Status::ok();
}

Result<NemotronHConfig> parse_config(const ConfigJson& c) {
  NemotronHConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size", 21504));
  RECUR_ASSIGN_OR_RETURN(q.blocks, parse_pattern(c));
  q.n_layers = static_cast<std::int64_t>(q.blocks.size());
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("layer_norm_epsilon", 1e-5));
  q.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_activation(c, "mlp_hidden_act", "relu2"));
  RECUR_ASSIGN_OR_RETURN(bool mlp_bias, c.get_bool("mlp_bias", false));
  if (mlp_bias) {
    return Error(StatusCode::kUnimplemented, "{}: mlp_bias=true is not supported", c.file());
  }
  for (auto [v, name] : {std::pair{q.d_model, "hidden_size"},
                         {q.vocab_size, "vocab_size"},
                         {q.d_ff, "intermediate_size"}}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), name);
    }
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  RECUR_RETURN_IF_ERROR(parse_mamba(c, q));
  RECUR_RETURN_IF_ERROR(parse_attention(c, q));
  return q;
}

// An MLP block keeps nothing between calls: an attention entry with no kv heads holds no bytes and
// leaves the state truncatable.
LayerStateSpec stateless_layer() { return {.kind = LayerStateSpec::Kind::kAttention}; }

struct NemotronHLayer {
  Block block = Block::kMamba;
  NormW norm;
  Mamba2W mamba;
  AttentionW attn;
  Relu2MlpW mlp;
};

class NemotronH final : public FamilyModel {
 public:
  NemotronH(const NemotronHConfig& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      NemotronHLayer& l = layers_[i];
      l.block = c.blocks[i];
      l.norm.eps = c.eps;
      l.mamba = {.norm = {.eps = c.eps},
                 .n_heads = c.ssm_heads,
                 .head_dim = c.ssm_head_dim,
                 .d_state = c.ssm_state,
                 .n_groups = c.ssm_groups,
                 .conv_kernel = c.conv_kernel,
                 .dt_min = c.dt_min,
                 .dt_max = c.dt_max,
                 .conv_bias_present = c.conv_bias,
                 .layer = i};
      l.attn = {.n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = 0,
                .qk_norm = false,
                .bias = c.attention_bias,
                .kv_dtype = c.kv_dtype,
                .layer = i,
                .module = "mixer."};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) {
      switch (l.block) {
        case Block::kMamba:
          s.layers.push_back(mamba2_state(l.mamba));
          break;
        case Block::kAttention:
          s.layers.push_back(attention_state(l.attn));
          break;
        case Block::kMlp:
          s.layers.push_back(stateless_layer());
          break;
      }
    }
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embeddings.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      NemotronHLayer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "norm.weight", c_.d_model, &l.norm);
      switch (l.block) {
        case Block::kMamba:
          visit_mamba2(v, p, c_.d_model, &l.mamba);
          break;
        case Block::kAttention:
          visit_attention(v, p, c_.d_model, &l.attn);
          break;
        case Block::kMlp:
          visit_relu2_mlp(v, p + "mixer.", c_.d_model, c_.d_ff, &l.mlp);
          break;
      }
    }
    visit_norm(v, p_ + "norm_f.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t need = 0;
    for (const auto& l : layers_) {
      switch (l.block) {
        case Block::kMamba:
          need = std::max(need, mamba2_scratch_per_row(l.mamba));
          break;
        case Block::kAttention:
          need = std::max(need, attention_scratch_per_row(l.attn));
          break;
        case Block::kMlp:
          need = std::max(need, c_.d_ff);
          break;
      }
    }
    return 2 * c_.d_model + need;
  }

  // Per block: h += mixer(norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const NemotronHLayer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.norm, h, x, n, d);
      switch (l.block) {
        case Block::kMamba:
          mamba2_block(ctx, l.mamba, x, y);
          break;
        case Block::kAttention:
          attention_block(ctx, l.attn, x, y);
          break;
        case Block::kMlp:
          relu2_mlp(ctx, l.mlp, x, y);
          break;
      }
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }
  // mamba2_block records captures; attention and MLP blocks need none.
  bool supports_capture() const override { return true; }

 private:
  NemotronHConfig c_;
  std::string p_;
  std::vector<NemotronHLayer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_nemotron_h(const ConfigJson& c,
                                                       const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(NemotronHConfig q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<NemotronH>(q, prefix));
}

}  // namespace recur::model
