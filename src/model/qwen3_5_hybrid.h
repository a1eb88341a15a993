// The Qwen3.5 hybrid decoder (spec section 2) that qwen3_5, qwen3_next and qwen3_5_moe share:
// Gated DeltaNet mixers on most layers, output-gated full attention (partial RoPE) every
// full_attention_interval-th layer, zero-centred block, q/k and final norms (the GDN output norm is
// plain and gated). A layer is h += mixer(zc_norm(h)); h += mlp(zc_norm(h)). The families differ
// in the MLP alone (qwen3_5.cc: SwiGLU; qwen3_next.cc: routed + shared experts), which they supply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/blocks.h"

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

// Everything of the model but the MLP, which a family adds through the three hooks below.
class Qwen35Hybrid : public FamilyModel {
 public:
  // `interleaved_gdn`: Qwen3-Next's in_proj_qkvz / in_proj_ba layout (GatedDeltaW::interleaved).
  Qwen35Hybrid(const HybridConfig& c, std::string prefix, bool interleaved_gdn);

  std::int64_t d_model() const final { return c_.d_model; }
  std::int64_t vocab_size() const final { return c_.vocab_size; }
  StateLayout state_layout() const final;
  void visit_tensors(TensorVisitor& v) final;
  std::int64_t scratch_floats_per_row() const final;
  void forward_layers(ForwardCtx& ctx, float* h) final;
  void final_norm(float* h, std::int64_t n_rows) const final;
  bool supports_capture() const final { return true; }
  const kernels::WeightView& embedding() const final { return embed_; }
  const kernels::WeightView& lm_head() const final { return c_.tied ? embed_ : head_; }

 protected:
  // Layer `layer`'s MLP tensors, under its prefix `p` ("model.layers.N.").
  virtual void visit_layer_mlp(TensorVisitor& v, const std::string& p, std::size_t layer) = 0;
  virtual std::int64_t layer_mlp_scratch_per_row(std::size_t layer) const = 0;
  // y = mlp(x), both [ctx.n_rows, d_model].
  virtual void layer_mlp(ForwardCtx& ctx, std::size_t layer, const float* x, float* y) const = 0;

 private:
  struct Layer {
    bool is_attention = false;
    NormW input_norm, post_norm;  // zero-centred
    AttentionW attn;              // when is_attention
    GatedDeltaW gdn;              // otherwise
  };
  HybridConfig c_;
  std::string p_;
  std::vector<Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace recur::model
