// Config fields most families share, read in one place with their key aliases and checks. Every
// error names c.file() and the key, as the family parsers' own do.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "model/config_json.h"
#include "util/status.h"

namespace recur::model {

struct SizeField {
  std::int64_t value;
  const char* key;
};
// "<file>: <key> must be positive" for the first field that is not.
Status require_positive(const ConfigJson& c, std::initializer_list<SizeField> fields);

// The first of `keys` the config has, else `fallback` (older remote-code names beside
// transformers 5's).
Result<std::int64_t> get_int_any(const ConfigJson& c, std::initializer_list<const char*> keys,
                                 std::int64_t fallback);

// rope_theta (transformers 4) or rope_parameters.rope_theta (5), the latter winning.
Result<double> read_rope_theta(const ConfigJson& c, double fallback);

// GQA geometry: num_attention_heads, num_key_value_heads, head_dim. A zero default means: heads
// required, kv heads = heads, head_dim = hidden_size / heads. Checked:
// positive, within check_size_bounds, heads a multiple of kv heads, head_dim at most
// kernels::kMaxHeadDim and even when RoPE rotates it.
struct AttentionGeometry {
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
};
struct AttentionDefaults {
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  bool rotary = true;
};
Result<AttentionGeometry> read_attention_geometry(const ConfigJson& c, std::int64_t d_model,
                                                  std::int64_t n_layers,
                                                  AttentionDefaults defaults = {});

// A Mamba2 mixer's fields in a family's spelling: Mamba2Config's num_heads / head_dim /
// state_size / n_groups / conv_kernel / use_conv_bias, the hybrids' mamba_* names. An absent key
// takes its default; a head_dim default of 0 means "auto" (the key may also say so): the inner
// width over the heads. Checked: positive, within check_size_bounds, heads a multiple of groups,
// and heads x head_dim equal to the inner width when one is given (errors name the keys).
struct Mamba2Keys {
  const char* heads;
  std::int64_t heads_default;
  const char* head_dim;
  std::int64_t head_dim_default;
  const char* state;
  std::int64_t state_default;
  std::initializer_list<const char*> groups;
  std::int64_t groups_default;
  std::initializer_list<const char*> conv_kernel;
  std::int64_t conv_kernel_default;
  std::initializer_list<const char*> conv_bias;
  std::initializer_list<const char*> dt_limit;
};
struct Mamba2Geometry {
  std::int64_t heads = 0, head_dim = 0, state = 0, groups = 0, conv_kernel = 0;
  bool conv_bias = true;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();  // no clamp: HF's default
};
// The mamba_* spelling GraniteMoeHybridConfig and FalconH1Config share (head_dim "auto").
extern const Mamba2Keys kMambaPrefixedKeys;
// `inner` (0: unchecked) is the width heads x head_dim must have, `inner_what` how the config
// states it ("mamba_d_ssm", "expand x hidden_size").
Result<Mamba2Geometry> read_mamba2(const ConfigJson& c, std::int64_t n_layers,
                                   const Mamba2Keys& keys, std::int64_t inner,
                                   std::string_view inner_what);

// The first of `keys` present, a [min, max] pair with min <= max, into *min and *max (left as
// they are when none is present).
Status read_dt_limit(const ConfigJson& c, std::initializer_list<const char*> keys, float* min,
                     float* max);

// "<file>: <key>=true (<what>) is not supported" when the boolean key is true.
Status refuse_true(const ConfigJson& c, const char* key, const char* what);

// Which layers attend in a sliding window: layer_types ("sliding_attention" / "full_attention",
// one per layer), else every layer but each `period`-th ((i + 1) % period == 0 is full).
Result<std::vector<bool>> read_sliding_layers(const ConfigJson& c, std::int64_t n_layers,
                                              std::int64_t period);

// RoPE frequencies from a table, for the scaled RoPE types: inv_freq [rotary_dim / 2] and the
// factor cos and sin are multiplied by.
struct RopeTable {
  std::vector<float> inv_freq;
  float attention_factor = 1.0f;
};
// rope_scaling (transformers 4) or rope_parameters (5) of rope_type "yarn", as transformers'
// _compute_yarn_parameters: factor (else max_position_embeddings / original), beta_fast 32,
// beta_slow 1, attention_factor (else 0.1 ln(factor) + 1, or the mscale / mscale_all_dim ratio),
// truncate (default true). An error when the config's rope type is not "yarn".
Result<RopeTable> read_yarn(const ConfigJson& c, double rope_theta, std::int64_t rotary_dim);
// The config's RoPE type ("default" when it names none) and the group that names it.
struct RopeType {
  std::string type = "default";
  std::string group;  // "rope_parameters" or "rope_scaling"; empty for the default
};
Result<RopeType> read_rope_type(const ConfigJson& c);

// An activation key, absent or `want`.
Status check_activation(const ConfigJson& c, const char* key, std::string_view want);

}  // namespace recur::model
