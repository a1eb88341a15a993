// NVIDIA Nemotron-H (model_type nemotron_h, docs/model-nemotron-h.md): a stack of single-mixer
// blocks, h += mixer(RMSNorm(h)), the mixer of block i named by hybrid_override_pattern[i]: "M"
// Mamba2 (gated norm per group), "*" GQA attention without positions (no RoPE), "-" ReLU² MLP,
// "E" mixture of ReLU² experts (NemotronHMoE: sigmoid router with DeepSeek-V3's group-limited,
// bias-corrected choice) beside an unweighted ReLU² shared expert. Final RMSNorm norm_f; separate
// head unless tied.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/config_readers.h"
#include "model/stack.h"

namespace recur::model {

namespace {

enum class Block : std::uint8_t { kMamba, kAttention, kMlp, kMoe };

// NemotronHConfig's MoE fields (read only when the pattern has "E" blocks).
struct NemotronHMoe {
  std::int64_t n_experts = 0, top_k = 0, d_ff = 0, shared_d_ff = 0, n_groups = 1, topk_groups = 1;
  bool norm_topk_prob = true;
  float routed_scale = 1.0f;
};

struct NemotronHConfig {
  std::int64_t d_model = 0, n_layers = 0, vocab_size = 0, d_ff = 0;
  AttentionGeometry attn;
  Mamba2Geometry ssm;
  NemotronHMoe moe;
  float eps = 1e-5f;
  bool tied = false, attention_bias = false;
  std::vector<Block> blocks;
  kernels::DType kv_dtype = kernels::DType::kBF16;
};

// One character or name per block: M / mamba / linear_attention, * / attention / full_attention,
// - / mlp, E / moe.
Result<Block> block_of(const ConfigJson& c, std::string_view key, std::string_view type) {
  if (type == "M" || type == "mamba" || type == "linear_attention") return Block::kMamba;
  if (type == "*" || type == "attention" || type == "full_attention") return Block::kAttention;
  if (type == "-" || type == "mlp") return Block::kMlp;
  if (type == "E" || type == "moe") return Block::kMoe;
  return Error(StatusCode::kInvalidArgument,
               "{}: {} holds '{}' (blocks are M, *, -, E or mamba, attention, mlp, moe)", c.file(),
               key, type);
}

// hybrid_override_pattern (the released configs), else layers_block_type / layer_types
// (transformers 5); its length is the layer count, as in HF and mlx-lm.
Result<std::vector<Block>> parse_pattern(const ConfigJson& c) {
  std::vector<Block> out;
  if (c.has("hybrid_override_pattern")) {
    RECUR_ASSIGN_OR_RETURN(std::string p, c.get_string("hybrid_override_pattern"));
    for (char ch : p) {
      RECUR_ASSIGN_OR_RETURN(Block b, block_of(c, "hybrid_override_pattern", {&ch, 1}));
      out.push_back(b);
    }
  } else {
    const char* key = c.has("layers_block_type") ? "layers_block_type" : "layer_types";
    if (!c.has(key)) {
      return Error(StatusCode::kInvalidArgument,
                   "{}: nemotron_h needs hybrid_override_pattern or layers_block_type", c.file());
    }
    RECUR_ASSIGN_OR_RETURN(auto types, c.get_strings(key));
    for (const auto& t : types) {
      RECUR_ASSIGN_OR_RETURN(Block b, block_of(c, key, t));
      out.push_back(b);
    }
  }
  if (out.empty()) {
    return Error(StatusCode::kInvalidArgument, "{}: the block pattern is empty", c.file());
  }
  return out;
}

Status parse_mamba(const ConfigJson& c, NemotronHConfig& q) {
  RECUR_RETURN_IF_ERROR(refuse_true(c, "mamba_proj_bias", "Mamba2 projection biases"));
  RECUR_RETURN_IF_ERROR(refuse_true(c, "use_bias", "Mamba2 projection biases"));
  RECUR_RETURN_IF_ERROR(check_activation(c, "mamba_hidden_act", "silu"));
  // The released configs' names first, then transformers 5's.
  RECUR_ASSIGN_OR_RETURN(q.ssm, read_mamba2(c, q.n_layers,
                                            {.heads = "mamba_num_heads",
                                             .heads_default = 128,
                                             .head_dim = "mamba_head_dim",
                                             .head_dim_default = 64,
                                             .state = "ssm_state_size",
                                             .state_default = 128,
                                             .groups = {"n_groups", "mamba_n_groups"},
                                             .groups_default = 8,
                                             .conv_kernel = {"conv_kernel", "mamba_d_conv"},
                                             .conv_kernel_default = 4,
                                             .conv_bias = {"use_conv_bias", "mamba_conv_bias"},
                                             .dt_limit = {"time_step_limit", "mamba_dt_limit"}},
                                            0, ""));
  return Status::ok();
}

// No positions. NemotronHConfig's defaults: 32 heads, 8 kv heads, head_dim 128 (not
// hidden_size / heads); transformers reads head_dim only, not the remote-code era's
// attention_head_dim that Nemotron-H-4B's config.json carries (128 there too).
Status parse_attention(const ConfigJson& c, NemotronHConfig& q) {
  RECUR_ASSIGN_OR_RETURN(
      q.attn,
      read_attention_geometry(c, q.d_model, q.n_layers,
                              {.n_heads = 32, .n_kv_heads = 8, .head_dim = 128, .rotary = false}));
  RECUR_ASSIGN_OR_RETURN(q.attention_bias, c.get_bool("attention_bias", false));
  return Status::ok();
}

// NemotronHConfig's defaults: 8 routed experts (num_local_experts is its alias), 2 per token,
// 7688 wide, a 7688-wide shared expert, one group, norm_topk_prob true, routed_scaling_factor 1.
// transformers builds one shared expert of moe_shared_expert_intermediate_size whatever
// n_shared_experts says, and recur does too; a latent projection (moe_latent_size) is refused.
Status parse_moe(const ConfigJson& c, NemotronHConfig& q) {
  NemotronHMoe& m = q.moe;
  RECUR_ASSIGN_OR_RETURN(m.n_experts, get_int_any(c, {"n_routed_experts", "num_local_experts"}, 8));
  RECUR_ASSIGN_OR_RETURN(m.top_k, c.get_int("num_experts_per_tok", 2));
  RECUR_ASSIGN_OR_RETURN(m.d_ff, c.get_int("moe_intermediate_size", 7688));
  RECUR_ASSIGN_OR_RETURN(m.shared_d_ff, c.get_int("moe_shared_expert_intermediate_size", 7688));
  RECUR_ASSIGN_OR_RETURN(m.n_groups, c.get_int("n_group", 1));
  RECUR_ASSIGN_OR_RETURN(m.topk_groups, c.get_int("topk_group", 1));
  RECUR_ASSIGN_OR_RETURN(m.norm_topk_prob, c.get_bool("norm_topk_prob", true));
  RECUR_ASSIGN_OR_RETURN(double scale, c.get_float("routed_scaling_factor", 1.0));
  m.routed_scale = static_cast<float>(scale);
  if (c.has("moe_latent_size")) {
    return Error(StatusCode::kUnimplemented,
                 "{}: moe_latent_size (the experts' latent projection) is not supported", c.file());
  }
  RECUR_RETURN_IF_ERROR(check_expert_counts(c, m.n_experts, m.top_k, "n_routed_experts"));
  RECUR_RETURN_IF_ERROR(require_positive(
      c,
      {{m.d_ff, "moe_intermediate_size"}, {m.shared_d_ff, "moe_shared_expert_intermediate_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {m.d_ff, m.shared_d_ff}, {}));
  if (!std::isfinite(scale)) {
    return Error(StatusCode::kInvalidArgument, "{}: routed_scaling_factor {} must be finite",
                 c.file(), scale);
  }
  // DeepSeek-V3's grouping: equal groups of at least two experts (a group's score is its top two),
  // topk_group of them kept, holding at least num_experts_per_tok experts.
  const std::int64_t per_group = m.n_groups >= 1 ? m.n_experts / m.n_groups : 0;
  if (m.n_groups < 1 || m.n_experts % m.n_groups != 0 || (m.n_groups > 1 && per_group < 2) ||
      m.topk_groups < 1 || m.topk_groups > m.n_groups || m.top_k > m.topk_groups * per_group) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: n_group {} and topk_group {}: need n_routed_experts ({}) split into n_group "
                 "equal groups (of at least 2 experts when n_group > 1), 1 <= topk_group <= "
                 "n_group, and num_experts_per_tok ({}) <= topk_group x experts per group",
                 c.file(), m.n_groups, m.topk_groups, m.n_experts, m.top_k);
  }
  return Status::ok();
}

Result<NemotronHConfig> parse_config(const ConfigJson& c) {
  NemotronHConfig q;
  RECUR_ASSIGN_OR_RETURN(q.d_model, c.get_int("hidden_size"));
  RECUR_ASSIGN_OR_RETURN(q.vocab_size, c.get_int("vocab_size"));
  RECUR_ASSIGN_OR_RETURN(q.d_ff, c.get_int("intermediate_size", 21504));
  RECUR_ASSIGN_OR_RETURN(q.blocks, parse_pattern(c));
  q.n_layers = static_cast<std::int64_t>(q.blocks.size());
  RECUR_ASSIGN_OR_RETURN(double eps, c.get_float("layer_norm_epsilon", 1e-5));
  q.eps = static_cast<float>(eps);
  RECUR_ASSIGN_OR_RETURN(q.tied, c.get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(q.kv_dtype, kv_dtype_from_config(c));
  RECUR_RETURN_IF_ERROR(check_activation(c, "mlp_hidden_act", "relu2"));
  RECUR_ASSIGN_OR_RETURN(bool mlp_bias, c.get_bool("mlp_bias", false));
  if (mlp_bias) {
    return Error(StatusCode::kUnimplemented, "{}: mlp_bias=true is not supported", c.file());
  }
  RECUR_RETURN_IF_ERROR(require_positive(
      c,
      {{q.d_model, "hidden_size"}, {q.vocab_size, "vocab_size"}, {q.d_ff, "intermediate_size"}}));
  RECUR_RETURN_IF_ERROR(check_size_bounds(c, q.n_layers, {q.d_model, q.d_ff, q.vocab_size}, {}));
  RECUR_RETURN_IF_ERROR(parse_mamba(c, q));
  RECUR_RETURN_IF_ERROR(parse_attention(c, q));
  if (std::find(q.blocks.begin(), q.blocks.end(), Block::kMoe) != q.blocks.end()) {
    RECUR_RETURN_IF_ERROR(parse_moe(c, q));
  }
  return q;
}

// NemotronHMoE: sigmoid scores of gate.weight [E, d], the top k of score +
// gate.e_score_correction_bias among the topk_group best groups, their unbiased scores divided by
// their sum + 1e-20 when norm_topk_prob, times routed_scaling_factor; ReLU² experts
// experts.<e>.{up,down}_proj (MLX: switch_mlp.fc1 / fc2; transformers 5: stacked experts.up_proj /
// down_proj), then the shared expert shared_experts.{up,down}_proj added unweighted.
std::unique_ptr<Mixer> moe_mixer(const NemotronHMoe& m) {
  MoeW w{.n_experts = m.n_experts,
         .top_k = m.top_k,
         .d_ff = m.d_ff,
         .norm_topk_prob = m.norm_topk_prob,
         .score = RouterRule::Score::kSigmoid,
         .norm_eps = 1e-20f,
         .routed_scale = m.routed_scale,
         .act = ExpertAct::kRelu2,
         .n_groups = m.n_groups,
         .topk_groups = m.topk_groups};
  w.names.module = "mixer.";
  w.names.selection_bias = "gate.e_score_correction_bias";
  w.names.fused_gate_up = "experts.up_proj";
  w.names.mlx_proj[1] = "fc1";
  w.names.mlx_proj[2] = "fc2";
  return std::make_unique<MoeMixer>(
      std::move(w),
      MoeMixer::Relu2Shared{.d_ff = m.shared_d_ff, .module = "mixer.shared_experts."});
}

}  // namespace

Result<std::unique_ptr<FamilyModel>> create_nemotron_h(const ConfigJson& c,
                                                       const std::string& prefix) {
  RECUR_ASSIGN_OR_RETURN(NemotronHConfig q, parse_config(c));
  StackSpec s{.d_model = q.d_model,
              .vocab_size = q.vocab_size,
              .prefix = prefix,
              .embedding_name = "embeddings.weight",
              .final_norm_name = "norm_f.weight",
              .final_norm = {.eps = q.eps},
              .tied = q.tied};
  // Per block: h += mixer(norm(h)).
  for (Block b : q.blocks) {
    std::unique_ptr<Mixer> mixer;
    switch (b) {
      case Block::kMamba:
        mixer = std::make_unique<Mamba2Mixer>(mamba2_weights(q.ssm, q.eps));
        break;
      case Block::kAttention: {
        AttentionW attn = gqa_attention(q.attn, AttentionW{}.rope_theta, q.kv_dtype);
        attn.rotary_dim = 0;  // no positions
        attn.bias = q.attention_bias;
        attn.module = "mixer.";
        mixer = std::make_unique<AttentionMixer>(std::move(attn));
        break;
      }
      case Block::kMlp:
        mixer = std::make_unique<Relu2MlpMixer>(q.d_ff, "mixer.");
        break;
      case Block::kMoe:
        mixer = moe_mixer(q.moe);
        break;
    }
    StackLayer l;
    l.sublayers.push_back(pre_norm("norm.weight", {.eps = q.eps}, std::move(mixer)));
    s.layers.push_back(std::move(l));
  }
  return make_stack(std::move(s));
}

}  // namespace recur::model
