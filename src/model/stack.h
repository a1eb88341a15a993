// The decoder stack every family runs: embedding (optionally scaled), layers of sublayers, final
// norm, head (tied or not), last touches on the logits. A sublayer is
//   y = Σ scale_j · mixer_j(pre_norm(h));  y = post_norm(y) if any;  h += residual_scale · y
// with the mixers of mixers.h. A family's file reads its config into a StackSpec (and supplies a
// mixer only where its math is new); this one implementation visits the tensors, numbers the state
// slots (stateful mixers only, in visiting order), sizes the scratch and runs the forward.
//
// Float order, kept from the families' own loops so their bytes do not move: one mixer, or mixers
// that all have scale 1, are summed left to right (kernels::add) and added with residual_scale
// (add_scaled); mixers with scales are summed as h += (s_0 · y_0 + s_1 · y_1 + ...) in one pass
// (Falcon-H1's parallel attention and Mamba2), which needs residual_scale 1 and no post-norm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/mixers.h"

namespace recur::model {

struct Sublayer {
  // Names under the layer prefix; an empty post_norm_name means no post-norm.
  std::string norm_name;
  NormW norm;
  struct Part {
    std::unique_ptr<Mixer> mixer;
    float scale = 1.0f;
  };
  std::vector<Part> mixers;
  std::string post_norm_name;
  NormW post_norm;
  float residual_scale = 1.0f;
};

struct StackLayer {
  std::vector<Sublayer> sublayers;
};

// What the head's logits go through last, in this order (each off at its default).
struct LogitFinish {
  float divisor = 1.0f;     // Granite's logits_scaling: logits / divisor
  float multiplier = 1.0f;  // Falcon-H1's lm_head_multiplier
  float softcap = 0.0f;     // Gemma's final_logit_softcapping: cap · tanh(logits / cap)
};

struct StackSpec {
  std::int64_t d_model = 0, vocab_size = 0;
  std::string prefix;  // the resolved tensor prefix ("model.", "backbone.", ...)
  std::string embedding_name = "embed_tokens.weight";
  // h = embedding · embed_scale; Gemma's factor is first rounded to the embedding's dtype, as
  // transformers casts it to that dtype before the product.
  float embed_scale = 1.0f;
  bool embed_scale_in_embedding_dtype = false;
  std::vector<StackLayer> layers;  // layer i's tensors are under prefix + "layers.<i>."
  std::string final_norm_name = "norm.weight";
  NormW final_norm;
  bool tied = false;
  LogitFinish logits;
};

class DecoderStack final : public FamilyModel {
 public:
  explicit DecoderStack(StackSpec spec);

  std::int64_t d_model() const override { return s_.d_model; }
  std::int64_t vocab_size() const override { return s_.vocab_size; }
  std::int64_t n_layers() const override { return static_cast<std::int64_t>(s_.layers.size()); }
  StateLayout state_layout() const override;
  void visit_tensors(TensorVisitor& v) override;
  std::int64_t scratch_floats_per_row() const override;
  void forward_layers(ForwardCtx& ctx, float* h) override;
  void final_norm(float* h, std::int64_t n_rows) const override;
  void finish_logits(float* logits, std::int64_t n_rows) const override;
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return s_.tied ? embed_ : head_; }

 private:
  void run_sublayer(ForwardCtx& ctx, const Sublayer& sub, float* h, float* x, float* y) const;

  StackSpec s_;
  float embed_scale_ = 1.0f;
  kernels::WeightView embed_, head_;
};

// The spec's family model (a FamilyModel for registry.cc's create functions).
std::unique_ptr<FamilyModel> make_stack(StackSpec spec);

// A sublayer of one mixer: h += residual_scale · mixer(norm(h)), the norm named `norm_name`.
Sublayer pre_norm(std::string norm_name, NormW norm, std::unique_ptr<Mixer> mixer,
                  float residual_scale = 1.0f);
// The layer most families have: h += mixer(norm(h)); h += ffn(norm(h)), the norms named
// input_layernorm and post_attention_layernorm.
StackLayer mixer_ffn_layer(NormW norm, std::unique_ptr<Mixer> mixer, std::unique_ptr<Mixer> ffn,
                           float residual_scale = 1.0f);

}  // namespace recur::model
