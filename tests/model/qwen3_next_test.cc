// Qwen3-Next and Qwen3.5-MoE specifics: the real configs' state sizes (Gated DeltaNet state and
// conv window on 3 layers of 4, bf16 K/V on the 4th), Qwen3.5-MoE's nesting in text_config, and
// config errors naming the key.
#include <gtest/gtest.h>

#include <string>

#include "model/model.h"

namespace recur::model {
namespace {

// Qwen/Qwen3-Next-80B-A3B-Instruct's config.json (model-families.md 3.1).
constexpr const char* kQwen3Next80b = R"({
  "architectures": ["Qwen3NextForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4,
  "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
  "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_next",
  "moe_intermediate_size": 512, "norm_topk_prob": true, "num_attention_heads": 16,
  "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
  "num_key_value_heads": 2, "output_router_logits": false, "partial_rotary_factor": 0.25,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 10000000,
  "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 512,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.57.0.dev0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// Qwen/Qwen3.5-35B-A3B's config.json, text part (the vision_config left out): the keys nest in
// text_config; no layer_types here, so full_attention_interval sets the schedule.
constexpr const char* kQwen3_5_35b = R"({
  "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
  "tie_word_embeddings": false,
  "text_config": {
    "model_type": "qwen3_5_moe_text", "attention_bias": false, "attn_output_gate": true,
    "dtype": "bfloat16", "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256,
    "hidden_act": "silu", "hidden_size": 2048, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144, "moe_intermediate_size": 512, "num_attention_heads": 16,
    "num_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 40,
    "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
                        "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                        "rope_type": "default"},
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": false,
    "vocab_size": 248320}})";

std::string with(std::string text, std::string_view from, std::string_view to) {
  const std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? text : text.replace(pos, from.size(), to);
}

// 12 of 48 (10 of 40) layers hold bf16 K/V of 2 heads x 256; the others a 32 x 128 x 128 f32
// state and a 3-column conv window over 2·16·128 + 32·128 = 8192 channels.
TEST(Qwen3Next, StateSizesOfTheRealConfigs) {
  auto next = state_layout_from_config(kQwen3Next80b);
  ASSERT_TRUE(next.is_ok()) << next.status().to_string();
  ASSERT_EQ(next->layers.size(), 48u);
  for (std::size_t i = 0; i < 48; ++i) {
    EXPECT_EQ(next->layers[i].kind, (i + 1) % 4 == 0 ? LayerStateSpec::Kind::kAttention
                                                     : LayerStateSpec::Kind::kRecurrent)
        << i;
  }
  EXPECT_EQ(next->kv_bytes_per_token(), 12 * 2 * 2 * 256 * 2);
  EXPECT_EQ(next->fixed_bytes(), 36 * (32 * 128 * 128 + 3 * 8192) * 4);
  EXPECT_FALSE(next->truncatable());
  auto moe = state_layout_from_config(kQwen3_5_35b);
  ASSERT_TRUE(moe.is_ok()) << moe.status().to_string();
  ASSERT_EQ(moe->layers.size(), 40u);
  EXPECT_EQ(moe->kv_bytes_per_token(), 10 * 2 * 2 * 256 * 2);
  EXPECT_EQ(moe->fixed_bytes(), 30 * (32 * 128 * 128 + 3 * 8192) * 4);
}

TEST(Qwen3Next, ConfigErrorsNameTheKey) {
  struct Case {
    const char* config;
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {kQwen3Next80b, R"("num_experts_per_tok": 10)", R"("num_experts_per_tok": 600)",
       "num_experts_per_tok 600"},
      {kQwen3Next80b, R"("shared_expert_intermediate_size": 512)",
       R"("shared_expert_intermediate_size": 0)", "shared_expert_intermediate_size"},
      {kQwen3Next80b, R"("mlp_only_layers": [])", R"("mlp_only_layers": [3])",
       ""},  // a dense layer of intermediate_size 5120: fine
      {kQwen3Next80b, R"("intermediate_size": 5120)", R"("intermediate_size": 0)",
       ""},  // unused while every layer is sparse
      {kQwen3Next80b, R"("linear_num_value_heads": 32)", R"("linear_num_value_heads": 24)",
       "linear heads 16/24"},
      {kQwen3Next80b, R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "yarn"})",
       "'yarn'"},
      {kQwen3Next80b, R"("num_experts": 512)", R"("num_experts": 0)", "num_experts 0"},
      {kQwen3_5_35b, R"("moe_intermediate_size": 512)", R"("moe_intermediate_size": -1)",
       "moe_intermediate_size must be positive"},
      {kQwen3_5_35b, R"("full_attention_interval": 4)",
       R"("full_attention_interval": 4, "layer_types": ["full_attention"])",
       "layer_types has 1 entries for 40 layers"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(c.config, c.from, c.to));
    if (c.error.empty()) {
      EXPECT_TRUE(r.is_ok()) << c.to << ": " << r.status().to_string();
      continue;
    }
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // Layers made dense need intermediate_size; an all-sparse config never reads it.
  auto dense =
      state_layout_from_config(with(with(kQwen3Next80b, R"("intermediate_size": 5120, )", ""),
                                    R"("mlp_only_layers": [])", R"("mlp_only_layers": [0])"));
  ASSERT_FALSE(dense.is_ok());
  EXPECT_NE(dense.status().message().find("intermediate_size"), std::string::npos)
      << dense.status().message();
}

}  // namespace
}  // namespace recur::model
