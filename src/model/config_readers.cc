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
  RECUR_ASSIGN_OR_RETURN(g.head_dim, get_int_any(c, {"head_dim", "attention_head_dim"}, head_dim));
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
