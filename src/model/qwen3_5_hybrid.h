// The Qwen3.5 hybrid decoder (spec section 2) that qwen3_5, qwen3_next and qwen3_5_moe share:
// Gated DeltaNet mixers on most layers, output-gated full attention (partial RoPE) every
// full_attention_interval-th layer, zero-centred block, q/k and final norms (the GDN output norm is
// plain and gated). A layer is h += mixer(zc_norm(h)); h += mlp(zc_norm(h)). The families differ
// in the MLP alone (qwen3_5.cc: SwiGLU; qwen3_next.cc: routed + shared experts), which they supply.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/stack.h"

namespace recur::model {

// The config every Qwen3.5 hybrid has; the MLP's fields are the family's.
struct HybridConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, rotary_dim = 0;
  std::int64_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, conv_kernel = 0;
  float eps = 1e-6f, rope_theta = 1e7f;
  bool tied = false;
  std::vector<bool> is_attention;  // per layer: full attention, else Gated DeltaNet
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// Reads and checks those fields (errors name c.file() and the key). The schedule is layer_types
// when present, else HF's default: layer i is full attention iff (i + 1) % interval == 0.
Result<HybridConfig> parse_hybrid_config(const ConfigJson& c);

// The stack of a Qwen3.5 hybrid with `ffn(i)` as layer i's MLP. `interleaved_gdn`: Qwen3-Next's
// in_proj_qkvz / in_proj_ba layout (GatedDeltaW::interleaved).
std::unique_ptr<FamilyModel> make_hybrid(
    const HybridConfig& c, const std::string& prefix, bool interleaved_gdn,
    const std::function<std::unique_ptr<Mixer>(std::int64_t)>& ffn);

}  // namespace recur::model
