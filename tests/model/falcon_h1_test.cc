// Falcon-H1 specifics: the falcon-h1-0.5b config's state sizes (two state entries per layer: the
// attention's K/V and the mixer's state), its config errors (each naming the key), and the
// generator's falcon-h1-0.5b config matching that config field for field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "modelgen/generator.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::TempDir;

// tiiuae/Falcon-H1-0.5B-Instruct's config.json as Megatron-Bridge's Falcon-H1 test records it
// (docs/model-falcon-h1.md), with the mamba_d_ssm its geometry fixes.
constexpr const char* kFalcon05b = R"({
  "architectures": ["FalconH1ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attention_in_multiplier": 1.0, "attention_out_multiplier": 0.9375,
  "attn_layer_indices": null, "embedding_multiplier": 5.656854249492381, "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02,
  "intermediate_size": 2048, "key_multiplier": 0.39062499999999994,
  "lm_head_multiplier": 0.0390625, "mamba_chunk_size": 128, "mamba_conv_bias": true,
  "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_ssm": 1536, "mamba_d_state": 128,
  "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_norm_before_gate": false,
  "mamba_proj_bias": false, "mamba_rms_norm": false, "mamba_use_mlp": true,
  "max_position_embeddings": 16384, "mlp_bias": false,
  "mlp_multipliers": [0.8838834764831844, 0.5859375], "model_type": "falcon_h1",
  "num_attention_heads": 8, "num_hidden_layers": 36, "num_key_value_heads": 2,
  "projectors_bias": false, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 100000000000.0, "ssm_in_multiplier": 1.25,
  "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
  "ssm_out_multiplier": 0.23570226039551587, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 32784})";

std::string with(std::string text, std::string_view from, std::string_view to) {
  const std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? text : text.replace(pos, from.size(), to);
}

TEST(FalconH1, StateSizesOfTheRealConfig) {
  auto layout = state_layout_from_config(kFalcon05b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 72u);
  for (std::size_t i = 0; i < 72; i += 2) {  // the mixers in the order the layer sums them
    EXPECT_EQ(layout->layers[i].kind, LayerStateSpec::Kind::kRecurrent) << i;
    EXPECT_EQ(layout->layers[i + 1].kind, LayerStateSpec::Kind::kAttention) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 18432);  // 36 layers·2·2·64·2 (bf16 K/V)
  EXPECT_EQ(layout->fixed_bytes(), 29085696);      // 36 × (24·64·128 + 3·1792) f32
  EXPECT_FALSE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kFalcon05b, 1000), 29085696 + 18432000);
}

TEST(FalconH1, ConfigErrorsNameTheKey) {
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("mamba_n_heads": 24)", R"("mamba_n_heads": 20)",
       "mamba_n_heads 20 x mamba_d_head 64 must equal mamba_d_ssm 1536"},
      {R"("mamba_proj_bias": false)", R"("mamba_proj_bias": true)", "mamba_proj_bias"},
      {R"("projectors_bias": false)", R"("projectors_bias": true)", "projectors_bias"},
      {R"("key_multiplier": 0.39062499999999994)", R"("key_multiplier": 0)", "key_multiplier"},
      {R"("ssm_out_multiplier": 0.23570226039551587)", R"("ssm_out_multiplier": Infinity)",
       "ssm_out_multiplier"},
      {R"("mlp_multipliers": [0.8838834764831844, 0.5859375])", R"("mlp_multipliers": [1.0])",
       "mlp_multipliers must hold 2 values"},
      {R"("ssm_multipliers": [0.3535533905932738, 0.25,)", R"("ssm_multipliers": [0.0, 0.25,)",
       "ssm_multipliers[0]"},
      {R"("hidden_act": "silu")", R"("hidden_act": "gelu")", "hidden_act 'gelu'"},
      {R"("head_dim": 64)", R"("head_dim": 63)", "head_dim 63"},
      {R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "yarn"})", "'yarn'"},
      {R"("mamba_d_state": 128)", R"("mamba_d_state": 1048576)", "beyond any supported model"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kFalcon05b, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // "auto" head size: mamba_d_ssm / heads = 64; no mamba_d_ssm: mamba_expand · hidden_size, which
  // 24 heads of 64 do not fill.
  auto a = state_layout_from_config(
      with(kFalcon05b, R"("mamba_d_head": 64)", R"("mamba_d_head": "auto")"));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->fixed_bytes(), 29085696);
  auto b = state_layout_from_config(with(kFalcon05b, R"("mamba_d_ssm": 1536, )", ""));
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("mamba_d_ssm 2048"), std::string::npos)
      << b.status().message();
}

// `recur make-model --preset falcon-h1-0.5b` writes every field of the real config with its
// value (and the token ids of its own tokenizer, which the real one does not share).
TEST(FalconH1, GeneratedPresetConfigIsTheRealOne) {
  TempDir tmp("falcon_preset");
  const std::string dir = (std::filesystem::path(tmp.path()) / "m").string();
  ASSERT_TRUE(
      modelgen::write_checkpoint(
          {.family = modelgen::Family::kFalconH1, .preset = "falcon-h1-0.5b", .layers = 1}, dir)
          .is_ok());
  std::ifstream in(std::filesystem::path(dir) / "config.json");
  const nlohmann::json got = nlohmann::json::parse(in);
  const nlohmann::json want = nlohmann::json::parse(kFalcon05b);
  for (const auto& [key, value] : want.items()) {
    if (key == "num_hidden_layers") continue;  // written with 1 layer here
    ASSERT_TRUE(got.contains(key)) << key;
    EXPECT_EQ(got[key], value) << key;
  }
  EXPECT_EQ(got["num_hidden_layers"], 1);
}

}  // namespace
}  // namespace recur::model
