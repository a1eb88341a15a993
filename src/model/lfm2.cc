// LFM2 / LFM2.5 (Lfm2ForCausalLM, docs/model-lfm2.md): every layer is RMSNorm → (gated short
// conv, or GQA attention with q/k norms and full RoPE) → residual → RMSNorm → SwiGLU → residual;
// the final norm is named embedding_norm; the head is tied to the embeddings. Config keys are read
// in both spellings the released checkpoints use (LFM2's block_* / full_attn_idxs / rope_theta,
// LFM2.5's layer_types / rope_parameters / tie_embedding). LFM2-MoE (lfm2_moe, LFM2-8B-A1B)
// keeps the layers and replaces the SwiGLU of every layer from num_dense_layers on with a mixture
// of experts: sigmoid router scores, the top num_experts_per_tok of score + expert_bias,
// renormalised and scaled by routed_scaling_factor (model/moe.h RouterRule).
#include <algorithm>
#include <cmath>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

struct Lfm2Config {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  std::int64_t conv_kernel = 0;
  AttentionGeometry attn;
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
  RECUR_ASSIGN_OR_RETURN(q.conv_kernel, c.get_int("conv_L_cache", 3));
  RECUR_ASSIGN_OR_RETURN(q.conv_bias, c.get_bool("conv_bias", false));
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("norm_eps", 1e-5));
  RECUR_ASSIGN_OR_RETURN(double theta_old, c.get_float("theta", 1e6));
  RECUR_ASSIGN_OR_RETURN(double theta, read_rope_theta(c, theta_old));
  RECUR_ASSIGN_OR_RETURN(bool tied_new, c.get_bool("tie_word_embeddings", true));
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_embedding", tied_new));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_default_rope(c));
  q.eps = static_cast<float>(eps);
  q.rope_theta = static_cast<float>(theta);
  RECUR_RETURN_IF_ERROR(require_positive(c, {{q.d_model, "hidden_size"},
                                             {q.n_layers, "num_hidden_layers"},
                                             {q.vocab_size, "vocab_size"},
                                             {q.conv_kernel, "conv_L_cache"}}));
  RECUR_RETURN_IF_ERROR(
      check_size_bounds(c, q.n_layers, {q.d_model, q.vocab_size}, {q.conv_kernel}));
  RECUR_ASSIGN_OR_RETURN(q.attn,
                         read_attention_geometry(c, q.d_model, q.n_layers, {.n_kv_heads = 8}));
  q.moe = c.model_type() == "lfm2_moe";
  if (q.moe) {
    RECUR_RETURN_IF_ERROR(parse_moe(c, q));
  } else {
    RECUR_ASSIGN_OR_RETURN(q.d_ff, parse_ff_width(c));
  }
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_ff, q.moe_d_ff}, {}));
  RECUR_ASSIGN_OR_RETURN(q.is_attention, parse_schedule(c, q.n_layers));
  return q;
}

// The dense feed-forward: HF's feed_forward.w1 / w3 / w2 (gate, up, down); mlx-lm's lfm2_moe.py
// renames them gate_proj / up_proj / down_proj.
class DenseFeedForward final : public GluMlpMixer {
 public:
  DenseFeedForward(std::int64_t d_ff, bool moe)
      : GluMlpMixer(MlpW{.module = "feed_forward.", .proj = {"w1", "w3", "w2"}}, d_ff), moe_(moe) {}
  void visit(TensorVisitor& v, const std::string& p, std::int64_t d_model) override {
    if (moe_ && v.has_tensor(p + "feed_forward.gate_proj.weight")) {
      w_.proj[0] = "gate_proj", w_.proj[1] = "up_proj", w_.proj[2] = "down_proj";
    }
    GluMlpMixer::visit(v, p, d_model);
  }

 private:
  bool moe_;
};

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_lfm2(const ConfigJson& c, const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(Lfm2Config q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .final_norm_name = "embedding_norm.weight",
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  // Lfm2DecoderLayer: h += mixer(operator_norm(h)); h += feed_forward(ffn_norm(h)).
  for (std::int64_t i = 0; i < q.n_layers; ++i) {
    std::unique_ptr<Mixer> mixer;
    if (q.is_attention[static_cast<std::size_t>(i)]) {
      // Lfm2Attention's names: out_proj (not o_proj), q_layernorm / k_layernorm (plain RMSNorm
      // over head_dim, before RoPE).
      AttentionW attn = gqa_attention(q.attn, q.rope_theta, q.kv_dtype, q.eps);
      attn.o_proj = "out_proj", attn.q_norm_name = "q_layernorm", attn.k_norm_name = "k_layernorm";
      mixer = std::make_unique<AttentionMixer>(std::move(attn));
    } else {
      mixer = std::make_unique<ShortConvMixer>(
          ShortConvW{.bias = q.conv_bias, .width = q.d_model, .kernel = q.conv_kernel});
    }
    std::unique_ptr<Mixer> ffn;
    if (q.moe && i >= q.n_dense) {
      // HF: feed_forward.gate (router), expert_bias (f32 buffer), experts.<e>.w1 / w3 / w2 (or
      // transformers 5's fused experts.gate_up_proj / down_proj); MLX: feed_forward.switch_mlp.
      ffn = std::make_unique<MoeMixer>(
          MoeW{.n_experts = q.n_experts,
               .top_k = q.top_k,
               .d_ff = q.moe_d_ff,
               .norm_topk_prob = q.norm_topk_prob,
               .score = RouterRule::Score::kSigmoid,
               .norm_eps = 1e-6f,
               .routed_scale = q.routed_scale,
               .names = {.module = "feed_forward.",
                         .router = "gate.weight",
                         .selection_bias = q.expert_bias ? "expert_bias" : "",
                         .proj = {"w1", "w3", "w2"}}});
    } else {
      ffn = std::make_unique<DenseFeedForward>(q.d_ff, q.moe);
    }
    StackLayer l;
    l.sublayers.push_back(pre_norm("operator_norm.weight", {.eps = q.eps}, std::move(mixer)));
    l.sublayers.push_back(pre_norm("ffn_norm.weight", {.eps = q.eps}, std::move(ffn)));
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
