// LFM2 / LFM2.5 (Lfm2ForCausalLM, docs/model.md "LFM2"): every layer is RMSNorm → (gated short
// conv, or GQA attention with q/k norms and full RoPE) → residual → RMSNorm → SwiGLU → residual;
// the final norm is named embedding_norm; the head is tied to the embeddings. Config keys are read
// in both spellings the released checkpoints use (LFM2's block_* / full_attn_idxs / rope_theta,
// LFM2.5's layer_types / rope_parameters / tie_embedding). LFM2-MoE (lfm2_moe, LFM2-8B-A1B)
// keeps the layers and replaces the SwiGLU of every layer from num_dense_layers on with a mixture
// of experts: sigmoid router scores, the top num_experts_per_tok of score + expert_bias,
// renormalised and scaled by routed_scaling_factor (model/moe.h RouterRule).
#include <algorithm>
#include <cmath>

#include "model/blocks.h"
#include "model/moe.h"
#include "model/short_conv.h"

namespace recur::model {

namespace {

struct Lfm2Config {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, conv_kernel = 0;
  float eps = 1e-5f, rope_theta = 1e6f;
  bool tied = true, conv_bias = false;
  std::vector<bool> is_attention;  // per layer: attention, else short conv
  // lfm2_moe: layers from n_dense on are sparse
  bool moe = false, norm_topk_prob = true, expert_bias = true;
  std::int64_t n_dense = 0, n_experts = 0, top_k = 0, moe_d_ff = 0;
  float routed_scale = 1.0f;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// layer_types ("full_attention" / "conv"), else full_attn_idxs, else (Lfm2Config's default)
// every layer attention.
Result<std::vector<bool>> parse_schedule(const ConfigJson& c, std::int64_t n_layers) {
  std::vector<bool> out(static_cast<std::size_t>(n_layers), true);
  if (c.has("layer_types")) {
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings("layer_types"));
    if (static_cast<std::int64_t>(types.size()) != n_layers) {
      return Error(StatusCode::kInvalidArgument, "{}: layer_types has {} entries for {} layers",
                   c.file(), types.size(), n_layers);
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (types[i] != "full_attention" && types[i] != "conv") {
        return Error(StatusCode::kInvalidArgument,
                     "{}: layer_types[{}] is '{}' (lfm2: 'full_attention' or 'conv')", c.file(), i,
                     types[i]);
      }
      out[i] = types[i] == "full_attention";
    }
    return out;
  }
  if (!c.has("full_attn_idxs")) return out;
  RECUR_ASSIGN_OR_RETURN(auto idxs, c.get_int_list("full_attn_idxs"));
  std::fill(out.begin(), out.end(), false);
  for (std::int64_t i : idxs) {
    if (i < 0 || i >= n_layers) {
      return Error(StatusCode::kInvalidArgument, "{}: full_attn_idxs names layer {} of {}",
                   c.file(), i, n_layers);
    }
    out[static_cast<std::size_t>(i)] = true;
  }
  return out;
}

// Lfm2MLP's width: block_ff_dim (else intermediate_size), and with block_auto_adjust_ff_dim
// int(2·ff/3), then int(multiplier·ff) rounded up to block_multiple_of. (HF rounds only when a
// multiplier is set; a null one reads as absent here, i.e. 1.0, as mlx-lm always rounds.)
Result<std::int64_t> parse_ff_width(const ConfigJson& c) {
  RECUR_ASSIGN_OR_RETURN(std::int64_t size, c.get_int("intermediate_size", 12288));
  RECUR_ASSIGN_OR_RETURN(std::int64_t ff, c.get_int("block_ff_dim", size));
  RECUR_ASSIGN_OR_RETURN(bool adjust, c.get_bool("block_auto_adjust_ff_dim", true));
  if (!adjust) return ff;
  RECUR_ASSIGN_OR_RETURN(double mult, c.get_float("block_ffn_dim_multiplier", 1.0));
  RECUR_ASSIGN_OR_RETURN(std::int64_t multiple, c.get_int("block_multiple_of", 256));
  if (multiple <= 0 || !(mult > 0.0 && mult < 1e3) || ff <= 0 || ff > (1 << 22)) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: feed-forward size fields out of range (block_ff_dim {}, "
                 "block_ffn_dim_multiplier {}, block_multiple_of {})",
                 c.file(), ff, mult, multiple);
  }
  ff = 2 * ff / 3;
  ff = static_cast<std::int64_t>(mult * static_cast<double>(ff));
  return (ff + multiple - 1) / multiple * multiple;
}

// Lfm2MoeConfig (its defaults are LFM2-8B-A1B's): the dense layers' Lfm2MoeMLP is exactly
// intermediate_size wide (no auto-adjustment), the experts moe_intermediate_size.
Status parse_moe(const ConfigJson& c, Lfm2Config& q) {
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size", 7168));
  RECUR_ASSIGN_OR_RETURN(q.moe_d_ff, c.get_int("moe_intermediate_size", 1792));
  RECUR_ASSIGN_OR_RETURN(q.n_dense, c.get_int("num_dense_layers", 2));
  RECUR_ASSIGN_OR_RETURN(q.n_experts, c.get_int("num_experts", 32));
  RECUR_ASSIGN_OR_RETURN(q.top_k, c.get_int("num_experts_per_tok", 4));
  RECUR_ASSIGN_OR_RETURN(q.expert_bias, c.get_bool("use_expert_bias", true));
  RECUR_ASSIGN_OR_RETURN(q.norm_topk_prob, c.get_bool("norm_topk_prob", true));
  RECUR_ASSIGN_OR_RETURN(double scale, c.get_float("routed_scaling_factor", 1.0));
  q.routed_scale = static_cast<float>(scale);
  RECUR_RETURN_IF_ERROR(check_expert_counts(c, q.n_experts, q.top_k));
  if (q.d_ff <= 0 || q.moe_d_ff <= 0 || q.n_dense < 0 || !std::isfinite(scale)) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: intermediate_size {}, moe_intermediate_size {}, num_dense_layers {} and "
                 "routed_scaling_factor {} must be positive (num_dense_layers may be 0) and finite",
                 c.file(), q.d_ff, q.moe_d_ff, q.n_dense, scale);
  }
  return Status::ok();
}

Result<Lfm2Config> parse_config(const ConfigJson& c) {
  Lfm2Config q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.n_layers, c.get_int("num_hidden_layers"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size", 65536));
  RECUR_ASSIGN_OR_RETURN(q.n_heads, c.get_int("num_attention_heads"));
  RECUR_ASSIGN_OR_RETURN(q.n_kv_heads, c.get_int("num_key_value_heads", 8));
  RECUR_ASSIGN_OR_RETURN(q.head_dim,
                         c.get_int("head_dim", q.n_heads > 0 ? q.d_model / q.n_heads : 0));
  RECUR_ASSIGN_OR_RETURN(q.conv_kernel, c.get_int("conv_L_cache", 3));
  RECUR_ASSIGN_OR_RETURN(q.conv_bias, c.get_bool("conv_bias", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("norm_eps", 1e-5));
  RECUR_ASSIGN_OR_RETURN(double theta_old, c.get_float("theta", 1e6));
  RECUR_ASSIGN_OR_RETURN(double theta_top, c.get_float("rope_theta", theta_old));
  RECUR_ASSIGN_OR_RETURN(double theta, c.get_float("rope_parameters.rope_theta", theta_top));
  RECUR_ASSIGN_OR_RETURN(bool tied_new, c.get_bool("tie_word_embeddings", true));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_embedding", tied_new));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  for (std::int64_t v :
       {q.d_model, q.n_layers, q.vocab_size, q.n_heads, q.n_kv_heads, q.head_dim, q.conv_kernel}) {
    if (v <= 0) {
      return Error(StatusCode::kInvalidArgument, "{}: a size field is zero or negative", c.file());
    }
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.vocab_size},
                                          {q.n_heads, q.n_kv_heads, q.head_dim, q.conv_kernel}));
  q.moe = c.model_type() == "lfm2_moe";
  if (q.moe) {
    RECUR_RETURN_IF_ERROR(parse_moe(c, q));
  } else {
    RECUR_ASSIGN_OR_RETURN(q.d_ff, parse_ff_width(c));
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_ff, q.moe_d_ff}, {}));
  RECUR_ASSIGN_OR_RETURN(q.is_attention, parse_schedule(c, q.n_layers));
  if (q.n_heads % q.n_kv_heads != 0 || q.head_dim % 2 != 0 || q.head_dim > kernels::kMaxHeadDim) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: unsupported attention geometry (heads {}/{}, head_dim {})", c.file(),
                 q.n_heads, q.n_kv_heads, q.head_dim);
  }
  return q;
}

struct Lfm2Layer {
  bool is_attention = false;
  NormW operator_norm, ffn_norm;
  AttentionW attn;  // when is_attention
  ShortConvW conv;  // otherwise
  MlpW mlp;
  bool sparse = false;  // lfm2_moe from num_dense_layers on
  MoeW moe;
};

class Lfm2 final : public FamilyModel {
 public:
  Lfm2(const Lfm2Config& c, std::string prefix) : c_(c), p_(std::move(prefix)) {
    layers_.resize(static_cast<std::size_t>(c.n_layers));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Lfm2Layer& l = layers_[i];
      l.is_attention = c.is_attention[i];
      l.operator_norm.eps = l.ffn_norm.eps = c.eps;
      l.attn = {.q_norm = {.eps = c.eps},
                .k_norm = {.eps = c.eps},
                .n_heads = c.n_heads,
                .n_kv_heads = c.n_kv_heads,
                .head_dim = c.head_dim,
                .rotary_dim = c.head_dim,
                .rope_theta = c.rope_theta,
                .kv_dtype = c.kv_dtype,
                .layer = i};
      l.conv = {.bias = c.conv_bias, .width = c.d_model, .kernel = c.conv_kernel, .layer = i};
      l.sparse = c.moe && static_cast<std::int64_t>(i) >= c.n_dense;
      // HF: feed_forward.gate (router), expert_bias (f32 buffer), experts.<e>.w1 / w3 / w2 (or
      // transformers 5's fused experts.gate_up_proj / down_proj); MLX: feed_forward.switch_mlp.
      l.moe = {.n_experts = c.n_experts,
               .top_k = c.top_k,
               .d_ff = c.moe_d_ff,
               .norm_topk_prob = c.norm_topk_prob,
               .score = RouterRule::Score::kSigmoid,
               .norm_eps = 1e-6f,
               .routed_scale = c.routed_scale,
               .names = {.module = "feed_forward.",
                         .router = "gate.weight",
                         .selection_bias = c.expert_bias ? "expert_bias" : "",
                         .proj = {"w1", "w3", "w2"}}};
    }
    final_norm_.eps = c.eps;
  }

  std::int64_t d_model() const override { return c_.d_model; }
  std::int64_t vocab_size() const override { return c_.vocab_size; }

  StateLayout state_layout() const override {
    StateLayout s;
    for (const auto& l : layers_) {
      s.layers.push_back(l.is_attention ? attention_state(l.attn) : short_conv_state(l.conv));
    }
    return s;
  }

  void visit_tensors(TensorVisitor& v) override {
    const std::int64_t d = c_.d_model;
    v.matrix(p_ + "embed_tokens.weight", c_.vocab_size, d, &embed_);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Lfm2Layer& l = layers_[i];
      const std::string p = p_ + "layers." + std::to_string(i) + ".";
      visit_norm(v, p + "operator_norm.weight", d, &l.operator_norm);
      if (l.is_attention) {
        visit_lfm2_attention(v, p, &l.attn);
      } else {
        visit_short_conv(v, p, &l.conv);
      }
      visit_norm(v, p + "ffn_norm.weight", d, &l.ffn_norm);
      if (l.sparse) {
        visit_moe(v, p, d, &l.moe);
      } else if (c_.moe && v.has_tensor(p + "feed_forward.gate_proj.weight")) {
        // mlx-lm's lfm2_moe.py renames w1 / w3 / w2 to gate_proj / up_proj / down_proj.
        l.mlp.module = "feed_forward.";
        visit_mlp(v, p, d, c_.d_ff, &l.mlp);
      } else {
        v.matrix(p + "feed_forward.w1.weight", c_.d_ff, d, &l.mlp.gate);
        v.matrix(p + "feed_forward.w3.weight", c_.d_ff, d, &l.mlp.up);
        v.matrix(p + "feed_forward.w2.weight", d, c_.d_ff, &l.mlp.down);
      }
    }
    visit_norm(v, p_ + "embedding_norm.weight", d, &final_norm_);
    if (!c_.tied) v.matrix("lm_head.weight", c_.vocab_size, d, &head_);
  }

  std::int64_t scratch_floats_per_row() const override {
    std::int64_t need = 0;
    for (const auto& l : layers_) {
      need = std::max({need, l.sparse ? moe_scratch_per_row(l.moe) : mlp_scratch_per_row(l.mlp),
                       l.is_attention ? attention_scratch_per_row(l.attn)
                                      : short_conv_scratch_per_row(l.conv)});
    }
    return 2 * c_.d_model + need;
  }

  // Lfm2DecoderLayer: h += mixer(operator_norm(h)); h += feed_forward(ffn_norm(h)).
  void forward_layers(ForwardCtx& ctx, float* h) override {
    const std::int64_t n = ctx.n_rows, d = c_.d_model;
    for (const Lfm2Layer& l : layers_) {
      ctx.scratch->reset();
      float* x = ctx.scratch->take(n * d);
      float* y = ctx.scratch->take(n * d);
      apply_norm(l.operator_norm, h, x, n, d);
      if (l.is_attention) {
        attention_block(ctx, l.attn, x, y);
      } else {
        short_conv_block(ctx, l.conv, x, y);
      }
      kernels::add(h, y, n * d);
      apply_norm(l.ffn_norm, h, x, n, d);
      if (l.sparse) {
        moe_block(ctx, l.moe, x, y);
      } else {
        swiglu_mlp(ctx, l.mlp, x, y);
      }
      kernels::add(h, y, n * d);
    }
  }

  void final_norm(float* h, std::int64_t n_rows) const override {
    apply_norm(final_norm_, h, h, n_rows, c_.d_model);
  }
  bool supports_capture() const override { return true; }
  const kernels::WeightView& embedding() const override { return embed_; }
  const kernels::WeightView& lm_head() const override { return c_.tied ? embed_ : head_; }

 private:
  // Lfm2Attention's names: out_proj (not o_proj), q_layernorm / k_layernorm (plain RMSNorm over
  // head_dim, before RoPE).
  void visit_lfm2_attention(TensorVisitor& v, const std::string& p, AttentionW* w) const {
    const std::int64_t d = c_.d_model, hd = w->head_dim;
    v.matrix(p + "self_attn.q_proj.weight", w->n_heads * hd, d, &w->q);
    v.matrix(p + "self_attn.k_proj.weight", w->n_kv_heads * hd, d, &w->k);
    v.matrix(p + "self_attn.v_proj.weight", w->n_kv_heads * hd, d, &w->v);
    v.matrix(p + "self_attn.out_proj.weight", d, w->n_heads * hd, &w->o);
    visit_norm(v, p + "self_attn.q_layernorm.weight", hd, &w->q_norm);
    visit_norm(v, p + "self_attn.k_layernorm.weight", hd, &w->k_norm);
  }

  Lfm2Config c_;
  std::string p_;
  std::vector<Lfm2Layer> layers_;
  NormW final_norm_;
  kernels::WeightView embed_, head_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_lfm2(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Lfm2Config q, parse_config(c));
  return std::unique_ptr<FamilyModel>(std::make_unique<Lfm2>(q, prefix));
}

}  // namespace recur::model
