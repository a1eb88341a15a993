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
  RECUR_ASSIGN_OR_RETURN(m.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("layer_norm_epsilon", 1e-5));
  m.eps = static_cast<float>(eps);
  RECUR_RETURN_IF_ERROR(read_dt_limit(c, {"time_step_limit"}, &m.dt_min, &m.dt_max));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "use_bias", "in/out projection bias"));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{m.d_model, "hidden_size"},
                                             {m.n_layers, "num_hidden_layers"},
                                             {m.vocab_size, "vocab_size"},
                                             {m.n_heads, "num_heads"},
                                             {m.head_dim, "head_dim"},
                                             {m.d_state, "state_size"},
                                             {m.n_groups, "n_groups"},
                                             {m.conv_kernel, "conv_kernel"},
                                             {m.expand, "expand"}}));
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
    Mamba2W mixer{.norm = {.eps = m.eps},
                  .n_heads = m.n_heads,
                  .head_dim = m.head_dim,
                  .d_state = m.d_state,
                  .n_groups = m.n_groups,
                  .conv_kernel = m.conv_kernel,
                  .dt_min = m.dt_min,
                  .dt_max = m.dt_max,
                  .conv_bias_present = m.conv_bias};
    StackLayer l;
    l.sublayers.push_back(
        pre_norm("norm.weight", {.eps = m.eps}, std::make_unique<Mamba2Mixer>(std::move(mixer))));
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
