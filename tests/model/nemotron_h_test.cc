// Nemotron-H specifics: the real Nemotron-H-4B config's state sizes (MLP blocks keep nothing, the
// Mamba2 width is heads x head_dim, not expand x hidden), the transformers-5 list form of the
// pattern, and config errors naming the key.
#include <gtest/gtest.h>

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
      {R"("M-M-M-M*)", R"("MEM-M-M*)", "mixture-of-experts block ('E')"},
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

}  // namespace
}  // namespace recur::model
