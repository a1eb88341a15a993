#include "model/config_readers.h"

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

Status check_activation(const ConfigJson& c, const char* key, std::string_view want) {
  if (!c.has(key)) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string act, c.get_string(key));
  if (act == want) return Status::ok();
  return Error(StatusCode::kUnimplemented, "{}: {} '{}' is not supported (only {})", c.file(), key,
               act, want);
}

}  // namespace recur::model
