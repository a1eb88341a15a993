#include "model/stack.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"
#include "util/dtype.h"

namespace recur::model {

namespace {

// Mixers one sublayer may sum (Falcon-H1 sums two; the outputs are taken from the scratch).
constexpr std::size_t kMaxMixers = 4;

bool scaled(const Sublayer& sub) {
  return std::any_of(sub.mixers.begin(), sub.mixers.end(),
                     [](const Sublayer::Part& p) { return p.scale != 1.0f; });
}

}  // namespace

DecoderStack::DecoderStack(StackSpec spec) : s_(std::move(spec)) {
  std::size_t slot = 0;
  for (StackLayer& l : s_.layers) {
    for (Sublayer& sub : l.sublayers) {
      RECUR_CHECK(!sub.mixers.empty() && sub.mixers.size() <= kMaxMixers);
      RECUR_CHECK(!scaled(sub) || (sub.residual_scale == 1.0f && sub.post_norm_name.empty()));
      for (Sublayer::Part& p : sub.mixers) {
        if (p.mixer->stateful()) p.mixer->bind_slot(slot++);
      }
    }
  }
}

StateLayout DecoderStack::state_layout() const {
  StateLayout s;
  for (const StackLayer& l : s_.layers) {
    for (const Sublayer& sub : l.sublayers) {
      for (const Sublayer::Part& p : sub.mixers) {
        if (p.mixer->stateful()) s.layers.push_back(p.mixer->state());
      }
    }
  }
  return s;
}

void DecoderStack::visit_tensors(TensorVisitor& v) {
  const std::int64_t d = s_.d_model;
  v.matrix(s_.prefix + s_.embedding_name, s_.vocab_size, d, &embed_);
  embed_scale_ = s_.embed_scale;
  if (s_.embed_scale_in_embedding_dtype && embed_.dtype == kernels::DType::kBF16) {
    embed_scale_ = round_to_bf16(embed_scale_);
  } else if (s_.embed_scale_in_embedding_dtype && embed_.dtype == kernels::DType::kF16) {
    embed_scale_ = f16_to_f32(f32_to_f16(embed_scale_));
  }
  for (std::size_t i = 0; i < s_.layers.size(); ++i) {
    const std::string p = s_.prefix + "layers." + std::to_string(i) + ".";
    for (Sublayer& sub : s_.layers[i].sublayers) {
      visit_norm(v, p + sub.norm_name, d, &sub.norm);
      for (Sublayer::Part& part : sub.mixers) part.mixer->visit(v, p, d);
      if (!sub.post_norm_name.empty()) visit_norm(v, p + sub.post_norm_name, d, &sub.post_norm);
    }
  }
  visit_norm(v, s_.prefix + s_.final_norm_name, d, &s_.final_norm);
  // The conditional-generation wrappers as mlx-vlm and transformers 4.50 lay them out
  // (language_model.model.*) keep the head beside the text model.
  const std::string head =
      s_.prefix.starts_with("language_model.") ? "language_model.lm_head.weight" : "lm_head.weight";
  // A tied checkpoint may still carry lm_head.weight (Qwen3-0.6B does); it is redundant.
  if (!s_.tied) v.matrix(head, s_.vocab_size, d, &head_);
}

std::int64_t DecoderStack::scratch_floats_per_row() const {
  std::int64_t need = 0;
  for (const StackLayer& l : s_.layers) {
    for (const Sublayer& sub : l.sublayers) {
      std::int64_t mixer = 0;
      for (const Sublayer::Part& p : sub.mixers)
        mixer = std::max(mixer, p.mixer->scratch_per_row());
      const auto extra = static_cast<std::int64_t>(sub.mixers.size()) - 1;
      need = std::max(need, extra * s_.d_model + mixer);
    }
  }
  return 2 * s_.d_model + need;
}

void DecoderStack::run_sublayer(ForwardCtx& ctx, const Sublayer& sub, float* h, float* x,
                                float* y) const {
  const std::int64_t n = ctx.n_rows, d = s_.d_model, nd = n * d;
  apply_norm(sub.norm, h, x, n, d);
  ScratchFrame frame(ctx.scratch);
  float* out[kMaxMixers] = {y};
  for (std::size_t j = 1; j < sub.mixers.size(); ++j) out[j] = ctx.scratch->take(nd);
  for (std::size_t j = 0; j < sub.mixers.size(); ++j) sub.mixers[j].mixer->forward(ctx, x, out[j]);
  if (scaled(sub)) {
    for (std::int64_t i = 0; i < nd; ++i) {
      float acc = out[0][i] * sub.mixers[0].scale;
      for (std::size_t j = 1; j < sub.mixers.size(); ++j) acc += out[j][i] * sub.mixers[j].scale;
      h[i] += acc;
    }
    return;
  }
  for (std::size_t j = 1; j < sub.mixers.size(); ++j) kernels::add(y, out[j], nd);
  if (!sub.post_norm_name.empty()) apply_norm(sub.post_norm, y, y, n, d);
  add_scaled(h, y, sub.residual_scale, nd);
}

void DecoderStack::forward_layers(ForwardCtx& ctx, float* h) {
  const std::int64_t n = ctx.n_rows, d = s_.d_model;
  if (embed_scale_ != 1.0f) {
    for (std::int64_t i = 0; i < n * d; ++i) h[i] *= embed_scale_;
  }
  for (const StackLayer& l : s_.layers) {
    ctx.scratch->reset();
    float* x = ctx.scratch->take(n * d);
    float* y = ctx.scratch->take(n * d);
    for (const Sublayer& sub : l.sublayers) run_sublayer(ctx, sub, h, x, y);
  }
}

void DecoderStack::final_norm(float* h, std::int64_t n_rows) const {
  apply_norm(s_.final_norm, h, h, n_rows, s_.d_model);
}

void DecoderStack::finish_logits(float* logits, std::int64_t n_rows) const {
  const std::int64_t n = n_rows * s_.vocab_size;
  const LogitFinish& f = s_.logits;
  if (f.divisor != 1.0f) {
    for (std::int64_t i = 0; i < n; ++i) logits[i] /= f.divisor;
  }
  if (f.multiplier != 1.0f) {
    for (std::int64_t i = 0; i < n; ++i) logits[i] *= f.multiplier;
  }
  if (f.softcap != 0.0f) {
    for (std::int64_t i = 0; i < n; ++i) logits[i] = std::tanh(logits[i] / f.softcap) * f.softcap;
  }
}

std::unique_ptr<FamilyModel> make_stack(StackSpec spec) {
  return std::make_unique<DecoderStack>(std::move(spec));
}

Sublayer pre_norm(std::string norm_name, NormW norm, std::unique_ptr<Mixer> mixer,
                  float residual_scale) {
  Sublayer s{.norm_name = std::move(norm_name), .norm = std::move(norm)};
  s.mixers.push_back({.mixer = std::move(mixer)});
  s.residual_scale = residual_scale;
  return s;
}

StackLayer mixer_ffn_layer(NormW norm, std::unique_ptr<Mixer> mixer, std::unique_ptr<Mixer> ffn,
                           float residual_scale) {
  StackLayer l;
  l.sublayers.push_back(pre_norm("input_layernorm.weight", norm, std::move(mixer), residual_scale));
  l.sublayers.push_back(
      pre_norm("post_attention_layernorm.weight", norm, std::move(ffn), residual_scale));
  return l;
}

}  // namespace recur::model
