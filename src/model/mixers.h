// The blocks a decoder stack (stack.h) composes its sublayers from, behind one interface: each
// existing block (blocks.h, mlp_variants.h, moe.h, moe_shared.h, short_conv.h) as a Mixer that
// lists its tensors, sizes its scratch, declares its state (stateful mixers only) and runs
// x [n_rows, d_model] -> out [n_rows, d_model]. A family sets the block's fields (geometry, tensor
// names) before handing it to the stack; the stack numbers the state slots.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/blocks.h"
#include "model/config_readers.h"
#include "model/mlp_variants.h"
#include "model/moe.h"
#include "model/moe_shared.h"
#include "model/short_conv.h"

namespace recur::model {

class Mixer {
 public:
  virtual ~Mixer() = default;
  // Tensors under the layer's prefix `p` ("model.layers.N.").
  virtual void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) = 0;
  // Scratch floats per batch row beyond the output (valid once visited).
  virtual std::int64_t scratch_per_row() const = 0;
  // Whether it keeps state between calls; then state() is its entry of the layout, and
  // bind_slot() tells it its index there.
  virtual bool stateful() const { return false; }
  virtual LayerStateSpec state() const { return {}; }
  virtual void bind_slot(std::size_t /*slot*/) {}
  virtual void forward(ForwardCtx& ctx, const float* x, float* out) const = 0;
};

// GQA attention of the geometry: RoPE over the whole head at rope_theta, plain q/k norms of
// qk_norm_eps when it is positive (none at 0), K/V kept in kv_dtype. Families change the rest.
inline AttentionW gqa_attention(const AttentionGeometry& g, float rope_theta,
                                kernels::DType kv_dtype, float qk_norm_eps = 0.0f) {
  return {.q_norm = {.eps = qk_norm_eps},
          .k_norm = {.eps = qk_norm_eps},
          .n_heads = g.n_heads,
          .n_kv_heads = g.n_kv_heads,
          .head_dim = g.head_dim,
          .rotary_dim = g.head_dim,
          .rope_theta = rope_theta,
          .qk_norm = qk_norm_eps > 0.0f,
          .kv_dtype = kv_dtype};
}

class AttentionMixer final : public Mixer {
 public:
  explicit AttentionMixer(AttentionW w) : w_(std::move(w)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_attention(v, p, d_model, &w_);
  }
  std::int64_t scratch_per_row() const override { return attention_scratch_per_row(w_); }
  bool stateful() const override { return true; }
  LayerStateSpec state() const override { return attention_state(w_); }
  void bind_slot(std::size_t slot) override { w_.layer = slot; }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    attention_block(ctx, w_, x, out);
  }

 private:
  AttentionW w_;
};

class GatedDeltaMixer final : public Mixer {
 public:
  explicit GatedDeltaMixer(GatedDeltaW w) : w_(std::move(w)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_gated_delta(v, p, d_model, &w_);
  }
  std::int64_t scratch_per_row() const override { return gated_delta_scratch_per_row(w_); }
  bool stateful() const override { return true; }
  LayerStateSpec state() const override { return gated_delta_state(w_); }
  void bind_slot(std::size_t slot) override { w_.layer = slot; }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    gated_delta_block(ctx, w_, x, out);
  }

 private:
  GatedDeltaW w_;
};

// A Mamba2 block of the geometry read by read_mamba2, its gated norm's eps, under `module`.
inline Mamba2W mamba2_weights(const Mamba2Geometry& g, float eps, std::string module = "mixer.") {
  return {.norm = {.eps = eps},
          .n_heads = g.heads,
          .head_dim = g.head_dim,
          .d_state = g.state,
          .n_groups = g.groups,
          .conv_kernel = g.conv_kernel,
          .dt_min = g.dt_min,
          .dt_max = g.dt_max,
          .conv_bias_present = g.conv_bias,
          .module = std::move(module)};
}

class Mamba2Mixer final : public Mixer {
 public:
  explicit Mamba2Mixer(Mamba2W w) : w_(std::move(w)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_mamba2(v, p, d_model, &w_);
  }
  std::int64_t scratch_per_row() const override { return mamba2_scratch_per_row(w_); }
  bool stateful() const override { return true; }
  LayerStateSpec state() const override { return mamba2_state(w_); }
  void bind_slot(std::size_t slot) override { w_.layer = slot; }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    mamba2_block(ctx, w_, x, out);
  }

 private:
  Mamba2W w_;
};

class ShortConvMixer final : public Mixer {
 public:
  explicit ShortConvMixer(ShortConvW w) : w_(std::move(w)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t /*d_model*/) override {
    visit_short_conv(v, p, &w_);
  }
  std::int64_t scratch_per_row() const override { return short_conv_scratch_per_row(w_); }
  bool stateful() const override { return true; }
  LayerStateSpec state() const override { return short_conv_state(w_); }
  void bind_slot(std::size_t slot) override { w_.layer = slot; }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    short_conv_block(ctx, w_, x, out);
  }

 private:
  ShortConvW w_;
};

// The gated MLPs: down(act(gate(x)) ⊙ up(x)), act silu (SwiGLU) or tanh-approximated gelu
// (Gemma's GeGLU).
class GluMlpMixer : public Mixer {
 public:
  enum class Act : std::uint8_t { kSilu, kGeluTanh };
  GluMlpMixer(MlpW w, std::int64_t d_ff, Act act = Act::kSilu)
      : w_(std::move(w)), d_ff_(d_ff), act_(act) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_mlp(v, p, d_model, d_ff_, &w_);
  }
  std::int64_t scratch_per_row() const override { return mlp_scratch_per_row(w_); }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override;

 protected:
  MlpW w_;
  std::int64_t d_ff_;
  Act act_;
};

// SwiGLU with one [gate | up] matrix (Granite 4.0-H's shared_mlp.input_linear / output_linear).
class FusedGluMixer final : public Mixer {
 public:
  // Full names under the layer prefix.
  FusedGluMixer(std::int64_t d_ff, std::string gate_up, std::string down)
      : gate_up_(std::move(gate_up)), down_(std::move(down)) {
    w_.d_ff = d_ff;
  }
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_fused_glu(v, p + gate_up_, p + down_, d_model, &w_);
  }
  std::int64_t scratch_per_row() const override { return fused_glu_scratch_per_row(w_); }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    fused_swiglu_mlp(ctx, w_, x, out);
  }

 private:
  FusedGluW w_;
  std::string gate_up_, down_;
};

// down(relu(up(x))²) under `module` (Nemotron-H's "mixer.").
class Relu2MlpMixer final : public Mixer {
 public:
  Relu2MlpMixer(std::int64_t d_ff, std::string module) : d_ff_(d_ff), module_(std::move(module)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    visit_relu2_mlp(v, p + module_, d_model, d_ff_, &w_);
  }
  std::int64_t scratch_per_row() const override { return relu2_mlp_scratch_per_row(w_); }
  void forward(ForwardCtx& ctx, const float* x, float* out) const override {
    relu2_mlp(ctx, w_, x, out);
  }

 private:
  Relu2MlpW w_;
  std::int64_t d_ff_;
  std::string module_;
};

// Routed experts (moe.h), optionally with Qwen3-Next's gated shared expert added in place
// (shared_d_ff > 0), or with Nemotron-H's un-gated ReLU² shared expert added unweighted
// (Relu2Shared: down(relu(up(x))²) of width d_ff under `module`, relative to the layer prefix).
class MoeMixer final : public Mixer {
 public:
  struct Relu2Shared {
    std::int64_t d_ff = 0;
    std::string module;  // "mixer.shared_experts."
  };
  explicit MoeMixer(MoeW w, std::int64_t shared_d_ff = 0)
      : w_(std::move(w)), shared_d_ff_(shared_d_ff) {}
  MoeMixer(MoeW w, Relu2Shared relu2_shared)
      : w_(std::move(w)), shared_d_ff_(0), relu2_shared_(std::move(relu2_shared)) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override;
  std::int64_t scratch_per_row() const override;
  void forward(ForwardCtx& ctx, const float* x, float* out) const override;

 private:
  MoeW w_;
  SharedExpertW shared_;
  std::int64_t shared_d_ff_;
  Relu2Shared relu2_shared_;
  Relu2MlpW relu2_shared_w_;
};

}  // namespace recur::model
