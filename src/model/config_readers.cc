#include "model/config_readers.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "kernels/kernels.h"
#include "model/family.h"

namespace recur::model {

Status require_positive(const ConfigJson& c, std::initializer_list<SizeField> fields) {
  for (const SizeField& f : fields) {
    if (f.value <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be positive", c.file(), f.key);
    }
  }
  return Status::ok();
}

Result<std::int64_t> get_int_any(const ConfigJson& c, std::initializer_list<const char*> keys,
                                 std::int64_t fallback) {
  for (const char* k : keys) {
    if (c.has(k)) return c.get_int(k);
  }
  return fallback;
}

Result<double> read_rope_theta(const ConfigJson& c, double fallback) {
  RECUR_ASSIGN_OR_RETURN(double top, c.get_float("rope_theta", fallback));
  return c.get_float("rope_parameters.rope_theta", top);
}

Result<AttentionGeometry> read_attention_geometry(const ConfigJson& c, std::int64_t d_model,
                                                  std::int64_t n_layers,
                                                  AttentionDefaults defaults) {
  AttentionGeometry g;
  if (defaults.n_heads > 0) {
    RECUR_ASSIGN_OR_RETURN(g.n_heads, c.get_int("num_attention_heads", defaults.n_heads));
  } else {
    RECUR_ASSIGN_OR_RETURN(g.n_heads, c.get_int("num_attention_heads"));
  }
  RECUR_ASSIGN_OR_RETURN(
      g.n_kv_heads,
      c.get_int("num_key_value_heads", defaults.n_kv_heads > 0 ? defaults.n_kv_heads : g.n_heads));
  const std::int64_t head_dim = defaults.head_dim > 0 ? defaults.head_dim
                                : g.n_heads > 0       ? d_model / g.n_heads
                                                      : 0;
  RECUR_ASSIGN_OR_RETURN(g.head_dim, c.get_int("head_dim", head_dim));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{g.n_heads, "num_attention_heads"},
                                             {g.n_kv_heads, "num_key_value_heads"},
                                             {g.head_dim, "head_dim"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, n_layers, {}, {g.n_heads, g.n_kv_heads, g.head_dim}));
  if (g.n_heads % g.n_kv_heads != 0 || (defaults.rotary && g.head_dim % 2 != 0) ||
      g.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}, kv heads {}, head_dim {})",
                 c.file(), g.n_heads, g.n_kv_heads, g.head_dim);
  }
  return g;
}

const Mamba2Keys kMambaPrefixedKeys = {.heads = "mamba_n_heads",
                                       .heads_default = 128,
                                       .head_dim = "mamba_d_head",
                                       .head_dim_default = 0,
                                       .state = "mamba_d_state",
                                       .state_default = 256,
                                       .groups = {"mamba_n_groups"},
                                       .groups_default = 1,
                                       .conv_kernel = {"mamba_d_conv"},
                                       .conv_kernel_default = 4,
                                       .conv_bias = {"mamba_conv_bias"},
                                       .dt_limit = {"time_step_limit"}};

Result<Mamba2Geometry> read_mamba2(const ConfigJson& c, std::int64_t n_layers, const Mamba2Keys& k,
                                   std::int64_t inner, std::string_view inner_what) {
  Mamba2Geometry m;
  RECUR_ASSIGN_OR_RETURN(m.heads, c.get_int(k.heads, k.heads_default));
  m.head_dim = k.head_dim_default;
  if (k.head_dim_default == 0) m.head_dim = m.heads > 0 ? inner / m.heads : 0;  // "auto"
  if (c.has(k.head_dim)) {
    auto text = c.get_string(k.head_dim);
    if (!text.is_ok() || *text != "auto") {
      RECUR_ASSIGN_OR_RETURN(m.head_dim, c.get_int(k.head_dim));
    }
  }
  RECUR_ASSIGN_OR_RETURN(m.state, c.get_int(k.state, k.state_default));
  RECUR_ASSIGN_OR_RETURN(m.groups, get_int_any(c, k.groups, k.groups_default));
  RECUR_ASSIGN_OR_RETURN(m.conv_kernel, get_int_any(c, k.conv_kernel, k.conv_kernel_default));
  for (const char* key : k.conv_bias) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(m.conv_bias, c.get_bool(key, true));
    break;
  }
  RECUR_RETURN_IF_ERROR(read_dt_limit(c, k.dt_limit, &m.dt_min, &m.dt_max));
  RECUR_RETURN_IF_ERROR(require_positive(c, {{m.heads, k.heads},
                                             {m.head_dim, k.head_dim},
                                             {m.state, k.state},
                                             {m.groups, *k.groups.begin()},
                                             {m.conv_kernel, *k.conv_kernel.begin()}}));
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, n_layers, {}, {m.heads, m.head_dim, m.state, m.groups, m.conv_kernel}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, n_layers, {m.heads * m.head_dim}, {}));
  if (inner > 0 && m.heads * m.head_dim != inner) {
    return Error(StatusCode::kInvalidArgument, "{}: {} {} x {} {} must equal {} {}", c.file(),
                 k.heads, m.heads, k.head_dim, m.head_dim, inner_what, inner);
  }
  if (m.heads % m.groups != 0) {
    return Error(StatusCode::kInvalidArgument, "{}: {} {} must be a multiple of {} {}", c.file(),
                 k.heads, m.heads, *k.groups.begin(), m.groups);
  }
  return m;
}

Status read_dt_limit(const ConfigJson& c, std::initializer_list<const char*> keys, float* min,
                     float* max) {
  for (const char* key : keys) {
    if (!c.has(key)) continue;
    RECUR_ASSIGN_OR_RETURN(auto lim, c.get_floats(key));
    if (lim.size() != 2 || !(lim[0] <= lim[1])) {
      return Error(StatusCode::kInvalidArgument, "{}: {} must be [min, max]", c.file(), key);
    }
    *min = static_cast<float>(lim[0]);
    *max = static_cast<float>(lim[1]);
    break;
  }
  return Status::ok();
}

Status refuse_true(const ConfigJson& c, const char* key, const char* what) {
  RECUR_ASSIGN_OR_RETURN(bool on, c.get_bool(key, false));
  if (!on) return Status::ok();
  return Error(StatusCode::kUnimplemented, "{}: {}=true ({}) is not supported", c.file(), key,
               what);
}

Result<std::vector<bool>> read_sliding_layers(const ConfigJson& c, std::int64_t n_layers,
                                              std::int64_t period) {
  std::vector<bool> sliding;
  if (!c.has("layer_types")) {
    for (std::int64_t i = 0; i < n_layers; ++i) sliding.push_back((i + 1) % period != 0);
    return sliding;
  }
  RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings("layer_types"));
  if (static_cast<std::int64_t>(types.size()) != n_layers) {
    return Error(StatusCode::kInvalidArgument, "{}: layer_types has {} entries for {} layers",
                 c.file(), types.size(), n_layers);
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] != "sliding_attention" && types[i] != "full_attention") {
      return Error(StatusCode::kInvalidArgument,
                   "{}: layer_types[{}] is '{}' (expected sliding_attention or full_attention)",
                   c.file(), i, types[i]);
    }
    sliding.push_back(types[i] == "sliding_attention");
  }
  return sliding;
}

Result<RopeType> read_rope_type(const ConfigJson& c) {
  RopeType t;
  for (const char* g : {"rope_parameters", "rope_scaling"}) {
    for (const char* key : {"rope_type", "type"}) {
      const std::string k = std::string(g) + "." + key;
      if (t.group.empty() && c.has(k)) {
        RECUR_ASSIGN_OR_RETURN(t.type, c.get_string(k));
        t.group = g;
      }
    }
  }
  return t;
}

Result<RopeTable> read_yarn(const ConfigJson& c, double rope_theta, std::int64_t rotary_dim) {
  RECUR_ASSIGN_OR_RETURN(const RopeType type, read_rope_type(c));
  if (type.type != "yarn") {
    return Error(StatusCode::kUnimplemented, "{}: {}.rope_type '{}' is not supported (only 'yarn')",
                 c.file(), type.group.empty() ? "rope_scaling" : type.group, type.type);
  }
  const std::string g = type.group + ".";
  auto optional = [&](const char* key, double fallback) -> Result<double> {
    return c.get_float(g + key, fallback);
  };
  RECUR_ASSIGN_OR_RETURN(const double original,
                         c.get_float(g + "original_max_position_embeddings"));
  double factor = 0;
  if (c.has(g + "factor")) {
    RECUR_ASSIGN_OR_RETURN(factor, c.get_float(g + "factor"));
  } else {
    RECUR_ASSIGN_OR_RETURN(const double max_pos, c.get_float("max_position_embeddings"));
    factor = max_pos / original;
  }
  RECUR_ASSIGN_OR_RETURN(const double beta_fast, optional("beta_fast", 32.0));
  RECUR_ASSIGN_OR_RETURN(const double beta_slow, optional("beta_slow", 1.0));
  RECUR_ASSIGN_OR_RETURN(const double mscale, optional("mscale", 0.0));
  RECUR_ASSIGN_OR_RETURN(const double mscale_all_dim, optional("mscale_all_dim", 0.0));
  RECUR_ASSIGN_OR_RETURN(const bool truncate, c.get_bool(g + "truncate", true));
  for (auto [v, key] : {std::pair{factor, "factor"},
                        {original, "original_max_position_embeddings"},
                        {beta_fast, "beta_fast"},
                        {beta_slow, "beta_slow"}}) {
    if (!(v > 0.0) || !std::isfinite(v)) {
      return Error(StatusCode::kInvalidArgument, "{}: {}{} must be positive", c.file(), g, key);
    }
  }
  auto get_mscale = [](double scale, double m) {
    return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
  };
  double attention_factor = 0;
  if (c.has(g + "attention_factor")) {
    RECUR_ASSIGN_OR_RETURN(attention_factor, c.get_float(g + "attention_factor"));
  } else if (mscale != 0.0 && mscale_all_dim != 0.0) {
    attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim);
  } else {
    attention_factor = get_mscale(factor, 1.0);
  }
  // The dimension index at which a frequency makes `rotations` turns over the original context.
  const auto dim = static_cast<double>(rotary_dim);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(rope_theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  RopeTable t{.attention_factor = static_cast<float>(attention_factor)};
  t.inv_freq.resize(static_cast<std::size_t>(rotary_dim / 2));
  for (std::size_t i = 0; i < t.inv_freq.size(); ++i) {
    const double pos_freq = std::pow(rope_theta, static_cast<double>(2 * i) / dim);
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // weight of the unscaled frequency
    t.inv_freq[i] = static_cast<float>(1.0 / (factor * pos_freq) * (1.0 - extrapolation) +
                                       1.0 / pos_freq * extrapolation);
  }
  return t;
}

Status check_activation(const ConfigJson& c, const char* key, std::string_view want) {
  if (!c.has(key)) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string(key));
  if (act == want) return Status::ok();
  return Error(StatusCode::kUnimplemented, "{}: {} '{}' is not supported (only {})", c.file(), key,
               act, want);
}

}  // namespace recur::model
