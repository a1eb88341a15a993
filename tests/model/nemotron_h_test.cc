// Nemotron-H specifics: the real Nemotron-H-4B config's state sizes (MLP blocks keep nothing, the
// Mamba2 width is heads x head_dim, not expand x hidden), the transformers-5 list form of the
// pattern, and config errors naming the key.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "model/model.h"

namespace recur::model {
namespace {

// nvidia/Nemotron-H-4B-Instruct-128K's config.json fields (remote-code era names).
constexpr const char* kNemotronH4b = R"({
  "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
  "attention_bias": false, "attention_dropout": 0.0, "attention_head_dim": 128,
  "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2,
  "hidden_dropout": 0.0, "hidden_size": 3072,
  "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
  "initializer_range": 0.02, "intermediate_size": 12288, "layer_norm_epsilon": 1e-05,
  "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 112,
  "mamba_proj_bias": false, "max_position_embeddings": 131072, "mlp_bias": false,
  "mlp_hidden_act": "relu2", "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52,
  "num_key_value_heads": 8, "num_logits_to_keep": 1, "pad_token_id": 0,
  "rescale_prenorm_residual": true, "residual_in_fp32": false, "rms_norm_eps": 1e-05,
  "ssm_state_size": 128, "tie_word_embeddings": false, "time_step_floor": 0.0001,
  "time_step_limit": [0.0, Infinity], "time_step_max": 0.1, "time_step_min": 0.001,
  "torch_dtype": "bfloat16", "use_bias": false, "use_cache": true, "use_conv_bias": true,
  "use_mamba_kernels": true, "vocab_size": 131072})";

std::string with(std::string text, std::string_view from, std::string_view to) {
  const std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? text : text.replace(pos, from.size(), to);
}

constexpr std::int64_t kFixed = 24 * (112 * 64 * 128 + 3 * (7168 + 2 * 8 * 128)) * 4;

TEST(NemotronH, StateSizesOfTheRealConfig) {
  auto layout = state_layout_from_config(kNemotronH4b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  // Entries only for the blocks that keep state: 24 Mamba2 and 4 attention of the 52.
  ASSERT_EQ(layout->layers.size(), 28u);
  EXPECT_EQ(layout->kv_bytes_per_token(), 16384);  // 4 blocks·2·8·128·2 (bf16 K/V)
  EXPECT_EQ(layout->fixed_bytes(), kFixed);        // 90,734,592
  EXPECT_EQ(kFixed, 90734592);
  EXPECT_FALSE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kNemotronH4b, 100), kFixed + 1638400);
}

// transformers reads head_dim only, 128 when absent (NemotronHConfig's default, not hidden_size /
// heads = 96 here); the released file's attention_head_dim is not read.
TEST(NemotronH, HeadDimIsTransformersDefaultWhenAbsent) {
  auto layout = state_layout_from_config(
      with(kNemotronH4b, R"("attention_head_dim": 128,)", R"("attention_head_dim": 64,)"));
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  EXPECT_EQ(layout->kv_bytes_per_token(), 4 * 2 * 8 * 128 * 2);
  auto explicit_dim = state_layout_from_config(
      with(kNemotronH4b, R"("attention_head_dim": 128,)", R"("head_dim": 64,)"));
  ASSERT_TRUE(explicit_dim.is_ok()) << explicit_dim.status().to_string();
  EXPECT_EQ(explicit_dim->kv_bytes_per_token(), 4 * 2 * 8 * 64 * 2);
}

TEST(NemotronH, ListFormOfThePatternGivesTheSameLayout) {
  std::string list = R"("layers_block_type": [)";
  const std::string pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    list += i ? ", " : "";
    list += pattern[i] == 'M' ? R"("mamba")" : pattern[i] == '*' ? R"("attention")" : R"("mlp")";
  }
  list += "]";
  auto a = state_layout_from_config(
      with(kNemotronH4b, R"("hybrid_override_pattern": ")" + pattern + "\"", list));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->fixed_bytes(), kFixed);
  EXPECT_EQ(a->kv_bytes_per_token(), 16384);
}

TEST(NemotronH, ConfigErrorsNameTheKey) {
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("M-M-M-M*)", R"("MXM-M-M*)", "hybrid_override_pattern holds 'X'"},
      {R"("mlp_hidden_act": "relu2")", R"("mlp_hidden_act": "silu")", "mlp_hidden_act 'silu'"},
      {R"("mamba_proj_bias": false)", R"("mamba_proj_bias": true)", "mamba_proj_bias"},
      {R"("mlp_bias": false)", R"("mlp_bias": true)", "mlp_bias"},
      {R"("n_groups": 8)", R"("n_groups": 5)", "multiple of n_groups 5"},
      {R"("time_step_limit": [0.0, Infinity])", R"("time_step_limit": [1.0, 0.5])",
       "time_step_limit must be [min, max]"},
      {R"("ssm_state_size": 128)", R"("ssm_state_size": 1048576)", "beyond any supported model"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kNemotronH4b, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

// nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's config.json (transformers 4.55 era).
constexpr const char* kNano = R"({
  "architectures": ["NemotronHForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2,
  "head_dim": 128, "hidden_dropout": 0.0, "hidden_size": 2688,
  "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
  "initializer_range": 0.02, "intermediate_size": 1856, "layer_norm_epsilon": 1e-05,
  "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 64,
  "mamba_proj_bias": false, "mamba_ssm_cache_dtype": "float32", "max_position_embeddings": 262144,
  "mlp_bias": false, "mlp_hidden_act": "relu2", "model_type": "nemotron_h",
  "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "n_group": 1,
  "n_groups": 8, "n_routed_experts": 128, "n_shared_experts": 1, "norm_eps": 1e-05,
  "norm_topk_prob": true, "num_attention_heads": 32, "num_experts_per_tok": 6,
  "num_hidden_layers": 52, "num_key_value_heads": 2, "num_logits_to_keep": 1, "pad_token_id": 0,
  "partial_rotary_factor": 1.0, "rescale_prenorm_residual": true, "residual_in_fp32": false,
  "rope_theta": 10000, "routed_scaling_factor": 2.5, "sliding_window": null,
  "ssm_state_size": 128, "tie_word_embeddings": false, "time_step_floor": 0.0001,
  "time_step_max": 0.1, "time_step_min": 0.001, "topk_group": 1, "torch_dtype": "bfloat16",
  "transformers_version": "4.55.4", "use_bias": false, "use_cache": true, "use_conv_bias": true,
  "use_mamba_kernels": true, "vocab_size": 131072})";

// 23 Mamba2 blocks of 64 heads x 64 x state 128 and a conv window of 3 x (4096 + 2·8·128); the 23
// MoE blocks keep nothing; 6 attention blocks of 2 kv heads x 128.
constexpr std::int64_t kNanoFixed = 23 * (64 * 64 * 128 + 3 * (4096 + 2 * 8 * 128)) * 4;

TEST(NemotronH, StateSizesOfTheNanoMoeConfig) {
  auto layout = state_layout_from_config(kNano);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 29u);
  EXPECT_EQ(layout->kv_bytes_per_token(), 6 * 2 * 2 * 128 * 2);
  EXPECT_EQ(layout->fixed_bytes(), kNanoFixed);
  EXPECT_EQ(kNanoFixed, 49930240);
  EXPECT_EQ(*snapshot_bytes_from_config(kNano, 100), kNanoFixed + 100 * 6144);
}

// The tensors of an E block: the router, its f32 correction bias, 128 un-gated experts and the
// shared expert, a tensor per expert as released.
TEST(NemotronH, MoeBlockTensorsAsReleased) {
  auto listed = tensors_from_config(kNano);
  ASSERT_TRUE(listed.is_ok()) << listed.status().to_string();
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const TensorEntry& t : *listed) shapes[t.name] = t.shape;
  using S = std::vector<std::int64_t>;
  const std::string p = "backbone.layers.1.mixer.";
  EXPECT_EQ(shapes.at(p + "gate.weight"), (S{128, 2688}));
  EXPECT_EQ(shapes.at(p + "gate.e_score_correction_bias"), (S{128}));
  EXPECT_EQ(shapes.at(p + "experts.0.up_proj.weight"), (S{1856, 2688}));
  EXPECT_EQ(shapes.at(p + "experts.127.down_proj.weight"), (S{2688, 1856}));
  EXPECT_EQ(shapes.at(p + "shared_experts.up_proj.weight"), (S{3712, 2688}));
  EXPECT_EQ(shapes.at(p + "shared_experts.down_proj.weight"), (S{2688, 3712}));
  EXPECT_EQ(shapes.count(p + "experts.0.gate_proj.weight"), 0u) << "the experts have no gate";
  EXPECT_EQ(shapes.at("backbone.layers.5.mixer.k_proj.weight"), (S{256, 2688}));
  EXPECT_EQ(shapes.at("backbone.layers.0.mixer.in_proj.weight"),
            (S{2 * 4096 + 2 * 8 * 128 + 64, 2688}));
  std::int64_t n = 0;
  for (const auto& [name, shape] : shapes) {
    std::int64_t e = 1;
    for (std::int64_t d : shape) e *= d;
    n += e;
  }
  EXPECT_EQ(n, 31577940288);  // the release's "31.6B total"
}

TEST(NemotronH, MoeListFormGivesTheSameLayout) {
  const std::string pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  std::string list = R"("layers_block_type": [)";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    list += i ? ", " : "";
    list += pattern[i] == 'M' ? R"("mamba")" : pattern[i] == '*' ? R"("attention")" : R"("moe")";
  }
  list += "]";
  auto a = state_layout_from_config(
      with(kNano, R"("hybrid_override_pattern": ")" + pattern + "\"", list));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->fixed_bytes(), kNanoFixed);
  EXPECT_EQ(a->kv_bytes_per_token(), 6144);
}

TEST(NemotronH, MoeConfigErrorsNameTheKey) {
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("n_routed_experts": 128)", R"("n_routed_experts": 0)", "n_routed_experts 0"},
      {R"("num_experts_per_tok": 6)", R"("num_experts_per_tok": 129)", "num_experts_per_tok 129"},
      {R"("n_group": 1)", R"("n_group": 3)", "n_group 3 and topk_group 1"},
      {R"("n_group": 1)", R"("n_group": 0)", "n_group 0 and topk_group 1"},
      {R"("n_group": 1)", R"("n_group": 128)", "n_group 128 and topk_group 1"},
      {R"("n_group": 1)", R"("n_group": 64)", "n_group 64 and topk_group 1"},  // 6 > 1 x 2
      {R"("topk_group": 1)", R"("topk_group": 0)", "n_group 1 and topk_group 0"},
      {R"("topk_group": 1)", R"("topk_group": 2)", "n_group 1 and topk_group 2"},
      {R"("moe_intermediate_size": 1856)", R"("moe_intermediate_size": 0)",
       "moe_intermediate_size must be positive"},
      {R"("moe_shared_expert_intermediate_size": 3712)",
       R"("moe_shared_expert_intermediate_size": -1)",
       "moe_shared_expert_intermediate_size must be positive"},
      {R"("routed_scaling_factor": 2.5)", R"("routed_scaling_factor": Infinity)",
       "routed_scaling_factor inf must be finite"},
      {R"("sliding_window": null)", R"("moe_latent_size": 1024)", "moe_latent_size"},
      {R"("MEMEM*)", R"("MEXEM*)", "hybrid_override_pattern holds 'X'"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kNano, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // 8 groups of 16 experts, 2 kept: 6 experts per token fit; the MoE keys are read only when the
  // pattern has E blocks.
  EXPECT_TRUE(state_layout_from_config(with(with(kNano, R"("n_group": 1)", R"("n_group": 8)"),
                                            R"("topk_group": 1)", R"("topk_group": 2)"))
                  .is_ok());
  EXPECT_TRUE(state_layout_from_config(
                  with(kNemotronH4b, R"("mlp_bias": false)", R"("mlp_bias": false, "n_group": 3)"))
                  .is_ok());
}

}  // namespace
}  // namespace recur::model
