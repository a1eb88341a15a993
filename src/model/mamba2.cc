// Mamba2 (spec section 4): every layer is plain-RMSNorm → Mamba2 mixer (conv, SSM scan,
// gate-then-norm) → residual; no MLP; final plain RMSNorm norm_f; head tied to the embeddings
// unless the config says otherwise. Defaults for absent keys follow HF Mamba2Config.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/blocks.h"

namespace recur::model {

namespace {

struct Mamba2Config {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0;
  std::int64_t n_heads = 0, head_dim = 0, d_state = 0, n_groups = 0, expand = 0, conv_kernel = 0;
  bool conv_bias = true, tied = false;
  float eps = 1e-5f, dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();
};

Result<Mamba2Config> parse_config(const ConfigJson& c) {
  Mamba2Config m;
  RECUR_ASSIGN_OR_RETURN(m.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(m.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(m.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(m.n_heads, c.get_int("num_heads", 128));
  RECUR_ASSIGN_OR_RETURN(m.head_dim, c.get_int("head_dim", 64));
  RECUR_ASSIGN_OR_RETURN(m.d_state, c.get_int("state_size", 128));
  RECUR_ASSIGN_OR_RETURN(m.n_groups, c.get_int("n_groups", 8));
  RECUR_ASSIGN_OR_RETURN(m.expand, c.get_int("expand", 2));
  RECUR_ASSIGN_OR_RETURN(m.conv_kernel, c.get_int("conv_kernel", 4));
  RECUR_ASSIGN_OR_RETURN(m.conv_bias, c.get_bool("use_conv_bias", true));
  RECUR_ASSIGN_OR_RETURN(bool in_bias, c.get_bool("use_bias", false));
  RECUR_ASSIGN_OR_RETURN(m.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("layer_norm_epsilon", 1e-5));
  m.eps = static_cast<float>(eps);
  if (c.has("time_step_limit")) {
    RECUR_ASSIGN_OR_RETURN(auto lim, c.get_floats("time_step_limit"));
    if (lim.size() != 2 || !(lim[0] <= lim[1])) {
      return Error(StatusCode::kInvalidArgument, "{}: time_step_limit must be [min, max]",
                   c.file());
    }
    m.dt_min = static_cast<float>(lim[0]);
    m.dt_max = static_cast<float>(lim[1]);
  }
  if (in_bias) {
    return Error(StatusCode::kUnimplemented,
                 "{}: use_bias=true (in/out projection bias) is not "
                 "supported",
                 c.file());
  }
  for (std::int64_t v : {m.d_model, m.n_layers, m.vocab_size, m.n_heads, m.head_dim, m.d_state,
                         m.n_groups, m.conv_kernel, m.expand}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: a size field is zero or negative", c.file());
    }
  }
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, m.n_layers, {m.d_model, m.vocab_size},
                        {m.n_heads, m.head_dim, m.d_state, m.n_groups, m.conv_kernel, m.expand}));
  if (m.n_heads * m.head_dim != m.expand * m.d_model || m.n_heads % m.n_groups != 0) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: num_heads {} x head_dim {} must equal expand {} x hidden_size {}, and "
                 "num_heads must be a multiple of n_groups {}",
                 c.file(), m.n_heads, m.head_dim, m.expand, m.d_model, m.n_groups);
  }
  return m;
}

struct Mamba2Layer {
  NormW norm;
  Mamba2W mixer;
};

class Mamba2 final : public FamilyModel {
 public:
  Mamba2(const Mamba2Config& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Mamba2Layer& l = layers_[i];
      l.norm.eps = c.eps;
      l.mixer = {.norm = {.eps = c.eps},
                 .n_heads = c.n_heads,
                 .head_dim = c.head_dim,
                 .d_state = c.d_state,
                 .n_groups = c.n_groups,
                 .conv_kernel = c.conv_kernel,
                 .dt_min = c.dt_min,
                 .dt_max = c.dt_max,
                 .conv_bias_present = c.conv_bias,
                 .layer = i};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) s.layers.push_back(mamba2_state(l.mixer));
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    v.matrix(p_ + "embeddings.weight", c_.vocab_size, c_.d_model, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Mamba2Layer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "norm.weight", c_.d_model, &l.norm);
      visit_mamba2(v, p, c_.d_model, &l.mixer);
    }
    visit_norm(v, p_ + "norm_f.weight", c_.d_model, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, c_.d_model, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    return 2 * c_.d_model + mamba2_scratch_per_row(layers_.front().mixer);
  }

  // Spec 4.3, per layer: h += mixer(norm(h)); the residual stream stays f32.
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const Mamba2Layer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.norm, h, x, n, d);
      mamba2_block(ctx, l.mixer, x, y);
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  bool supports_capture() const override { return true; }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  Mamba2Config c_;
  std::string p_;
  std::vector<Mamba2Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_mamba2(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Mamba2Config m, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Mamba2>(m, prefix));
}

}  // namespace recur::model
