// Mamba2 (spec section 4): every layer is plain-RMSNorm → Mamba2 mixer (conv, SSM scan,
// gate-then-norm) → residual; no MLP; final plain RMSNorm norm_f; head tied to the embeddings
// unless the config says otherwise. Defaults for absent keys follow HF Mamba2Config.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Mamba2Config {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, expand = 0;
  Mamba2Geometry ssm;
  bool tied = false;
  float eps = 1e-5f;
};

Result<Mamba2Config> parse_config(const ConfigJson& c) {
  Mamba2Config m;
  RECUR_ASSIGN_OR_RETURN(m.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(m.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(m.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(m.expand, c.get_int("expand", 2));
  RECUR_ASSIGN_OR_RETURN(m.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("layer_norm_epsilon", 1e-5));
  m.eps = static_cast<float>(eps);
  RECUR_RETURN_IF_ERROR(refuse_true(c, "use_bias", "in/out projection bias"));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{m.d_model, "hidden_size"},
                                             {m.n_layers, "num_hidden_layers"},
                                             {m.vocab_size, "vocab_size"},
                                             {m.expand, "expand"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, m.n_layers, {m.d_model, m.vocab_size}, {m.expand}));
  RECUR_ASSIGN_OR_RETURN(m.ssm, read_mamba2(c, m.n_layers,
                                            {.heads = "num_heads",
                                             .heads_default = 128,
                                             .head_dim = "head_dim",
                                             .head_dim_default = 64,
                                             .state = "state_size",
                                             .state_default = 128,
                                             .groups = {"n_groups"},
                                             .groups_default = 8,
                                             .conv_kernel = {"conv_kernel"},
                                             .conv_kernel_default = 4,
                                             .conv_bias = {"use_conv_bias"},
                                             .dt_limit = {"time_step_limit"}},
                                            m.expand * m.d_model, "expand x hidden_size"));
  return m;
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_mamba2(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Mamba2Config m, parse_config(c));
  StackSpec s{.d_model = m.d_model,
              .vocab_size = m.vocab_size,
              .prefix = prefix,
              .embedding_name = "embeddings.weight",
              .final_norm_name = "norm_f.weight",
              .final_norm = {.eps = m.eps},
              .tied = m.tied};
  // Spec 4.3, per layer: h += mixer(norm(h)); the residual stream stays f32.
  for (std::int64_t i = 0; i < m.n_layers; ++i) {
    Mamba2W mixer = mamba2_weights(m.ssm, m.eps);
    StackLayer l;
    l.sublayers.push_back(
        pre_norm("norm.weight", {.eps = m.eps}, std::make_unique<Mamba2Mixer>(std::move(mixer))));
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
