// config.json reading (nested text_config, Python's Infinity, defaults) and state sizes from
// config geometry alone, checked against the spec's table (model-families.md section 5).
#include <gtest/gtest.h>

#include <cmath>

#include "model/config_json.h"
#include "model/family.h"
#include "model/model.h"

namespace recur::model {
namespace {

// The registry's model types in its order, as the loader's error lists them.
std::string supported_model_types() {
  std::string list;
  for (const FamilyInfo& f : families()) {
    for (std::string_view t : f.model_types) list += (list.empty() ? "" : ", ") + std::string(t);
  }
  return list;
}

TEST(ConfigJson, ReadsTextConfigFirstThenTopLevel) {
  auto c = ConfigJson::parse(
      R"({"model_type":"qwen3_5","tie_word_embeddings":true,"vocab_size":7,
          "text_config":{"vocab_size":9,"rope_parameters":{"rope_theta":5.0}}})",
      "config.json");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->model_type(), "qwen3_5");
  EXPECT_EQ(*c->get_int("vocab_size"), 9);
  EXPECT_TRUE(*c->get_bool("tie_word_embeddings", false));
  EXPECT_EQ(*c->get_float("rope_parameters.rope_theta"), 5.0);
  EXPECT_EQ(*c->get_int("missing", 3), 3);
  auto missing = c->get_int("missing");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("config.json: missing field 'missing'"),
            std::string::npos);
}

TEST(ConfigJson, AcceptsPythonNonFiniteLiterals) {
  auto c = ConfigJson::parse(
      R"({"time_step_limit":[0.0, Infinity],"a":-Infinity,"b":NaN,"s":"Infinity and NaN",
          "f":{"__float__":"Infinity"}})",
      "config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  auto lim = c->get_floats("time_step_limit");
  ASSERT_TRUE(lim.is_ok());
  EXPECT_EQ((*lim)[0], 0.0);
  EXPECT_TRUE(std::isinf((*lim)[1]) && (*lim)[1] > 0);
  EXPECT_TRUE(std::isinf(*c->get_float("a")) && *c->get_float("a") < 0);
  EXPECT_TRUE(std::isnan(*c->get_float("b")));
  EXPECT_TRUE(std::isinf(*c->get_float("f")));
  EXPECT_EQ(*c->get_string("s"), "Infinity and NaN");  // strings are left alone
}

TEST(ConfigJson, RejectsMalformedAndWrongTypes) {
  EXPECT_FALSE(ConfigJson::parse("{", "config.json").is_ok());
  EXPECT_FALSE(ConfigJson::parse("[]", "config.json").is_ok());
  auto c = ConfigJson::parse(R"({"n":"x","eos_token_id":[1,"a"]})", "config.json");
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->get_int("n").is_ok());
  EXPECT_FALSE(c->get_int_list("eos_token_id").is_ok());
}

// Found by fuzz_config_json: a value nested thousands deep overflowed the stack in dump() and
// copies of the config (fuzz/regressions/fuzz_config_json).
TEST(ConfigJson, DeepNestingIsAnErrorNotACrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto c = ConfigJson::parse(R"({"model_type":"qwen3","hidden_size":)" + deep + "}", "config.json");
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("config.json: JSON nests deeper than 64 levels"),
            std::string::npos)
      << c.status().message();
  EXPECT_FALSE(state_layout_from_config(R"({"model_type":)" + deep + "}").is_ok());
  EXPECT_TRUE(ConfigJson::parse(R"({"a":)" + std::string(60, '[') + std::string(60, ']') + "}",
                                "config.json")
                  .is_ok());
}

TEST(ConfigJson, EosIdsIntOrList) {
  auto c = ConfigJson::parse(R"({"eos_token_id":5,"text_config":{"eos_token_id":[1,2]}})", "c");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(*c->get_int_list("eos_token_id"), (std::vector<std::int64_t>{1, 2}));
}

// Real configs (spec sections 1.1, 2.1, 4.1), trimmed to the fields that matter.
constexpr const char* kQwen3_06b = R"({
  "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
  "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "eos_token_id": 151645})";

constexpr const char* kQwen35_08b = R"({
  "model_type": "qwen3_5", "tie_word_embeddings": true,
  "text_config": {
    "dtype": "bfloat16", "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256,
    "hidden_size": 1024, "intermediate_size": 3584, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 16,
    "linear_value_head_dim": 128, "model_type": "qwen3_5_text", "num_attention_heads": 8,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-06, "vocab_size": 248320,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
                        "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                        "rope_type": "default"}}})";

constexpr const char* kMamba2_130m = R"({
  "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2",
  "hidden_size": 768, "num_hidden_layers": 24, "vocab_size": 50288,
  "num_heads": 24, "head_dim": 64, "expand": 2, "state_size": 128, "n_groups": 1,
  "conv_kernel": 4, "chunk_size": 256, "use_bias": false, "use_conv_bias": true,
  "hidden_act": "silu", "layer_norm_epsilon": 1e-05, "rms_norm": true, "residual_in_fp32": true,
  "time_step_rank": 48, "time_step_min": 0.001, "time_step_max": 0.1, "time_step_floor": 0.0001,
  "time_step_limit": [0.0, Infinity], "tie_word_embeddings": true,
  "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0})";

TEST(StateSizes, Qwen3MatchesSpecTable) {
  auto layout = state_layout_from_config(kQwen3_06b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  EXPECT_EQ(layout->kv_bytes_per_token(), 114688);  // 28·2·8·128·2 (bf16 KV)
  EXPECT_EQ(layout->fixed_bytes(), 0);
  EXPECT_TRUE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kQwen3_06b, 1000), 114688000);
}

TEST(StateSizes, Qwen35MatchesSpecTable) {
  auto layout = state_layout_from_config(kQwen35_08b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 24u);
  for (std::size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(layout->layers[i].kind == LayerStateSpec::Kind::kAttention, i % 4 == 3) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 12288);  // 6 layers·2·2·256·2
  EXPECT_EQ(layout->fixed_bytes(), 20201472);      // 18 × (262,144 + 18,432) f32
  EXPECT_FALSE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kQwen35_08b, 100), 20201472 + 1228800);
}

TEST(StateSizes, Mamba2MatchesSpecTable) {
  auto layout = state_layout_from_config(kMamba2_130m);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  EXPECT_EQ(layout->kv_bytes_per_token(), 0);
  EXPECT_EQ(layout->fixed_bytes(), 19390464);  // 24 × (196,608 + 5,376) f32
  EXPECT_EQ(*snapshot_bytes_from_config(kMamba2_130m, 5000), 19390464);
}

// LiquidAI/LFM2-350M's config.json (LFM2's spelling: full_attn_idxs, block_ff_dim, rope_theta).
constexpr const char* kLfm2_350m = R"({
  "architectures": ["Lfm2ForCausalLM"], "block_auto_adjust_ff_dim": true, "block_dim": 1024,
  "block_ff_dim": 6656, "block_ffn_dim_multiplier": 1.0, "block_mlp_init_scale": 1.0,
  "block_multiple_of": 256, "block_norm_eps": 1e-05, "block_out_init_scale": 1.0,
  "block_use_swiglu": true, "block_use_xavier_init": true, "bos_token_id": 1, "conv_L_cache": 3,
  "conv_bias": false, "conv_dim": 1024, "conv_dim_out": 1024, "conv_use_xavier_init": true,
  "eos_token_id": 7, "full_attn_idxs": [2, 5, 8, 10, 12, 14], "hidden_size": 1024,
  "initializer_range": 0.02, "max_position_embeddings": 128000, "model_type": "lfm2",
  "norm_eps": 1e-05, "num_attention_heads": 16, "num_heads": 16, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pad_token_id": 0, "rope_theta": 1000000.0,
  "torch_dtype": "bfloat16", "use_cache": true, "use_pos_enc": true, "vocab_size": 65536})";

// docs/model-lfm2.md: 10 conv windows of 2 × 1024 f32 and 6 attention layers of 8 kv heads of 64.
TEST(StateSizes, Lfm2MatchesDocTable) {
  auto layout = state_layout_from_config(kLfm2_350m);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) {
    const bool attention = i == 2 || i == 5 || i == 8 || i == 10 || i == 12 || i == 14;
    EXPECT_EQ(layout->layers[i].kind == LayerStateSpec::Kind::kAttention, attention) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 12288);  // 6·2·8·64·2
  EXPECT_EQ(layout->fixed_bytes(), 81920);         // 10 · (3 - 1) · 1024 · 4
  EXPECT_FALSE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kLfm2_350m, 1000), 81920 + 12288000);
}

// LFM2.5's spelling reads the same: layer_types over full_attn_idxs, rope_parameters over
// rope_theta; and each malformed LFM2 field is an error that names it.
TEST(StateSizes, Lfm2SpellingsAndErrors) {
  auto with = [](std::string text, std::string_view from, std::string_view to) {
    const std::size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return text.replace(pos, from.size(), to);
  };
  const std::string lfm25 = with(kLfm2_350m, R"("full_attn_idxs": [2, 5, 8, 10, 12, 14],)",
                                 R"("layer_types": ["conv", "conv", "full_attention", "conv",
      "conv", "full_attention", "conv", "conv", "full_attention", "conv", "full_attention",
      "conv", "full_attention", "conv", "full_attention", "conv"], "full_attn_idxs": null,
      "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},)");
  auto a = state_layout_from_config(kLfm2_350m);
  auto b = state_layout_from_config(lfm25);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  EXPECT_EQ(a->snapshot_bytes(77), b->snapshot_bytes(77));
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("full_attn_idxs": [2, 5, 8, 10, 12, 14])", R"("full_attn_idxs": [2, 16])",
       "full_attn_idxs names layer 16 of 16"},
      {R"("full_attn_idxs": [2, 5, 8, 10, 12, 14])",
       R"("layer_types": ["conv", "mamba", "conv", "conv", "conv", "conv", "conv", "conv", "conv",
       "conv", "conv", "conv", "conv", "conv", "conv", "conv"])",
       "layer_types[1] is 'mamba'"},
      {R"("full_attn_idxs": [2, 5, 8, 10, 12, 14])", R"("layer_types": ["conv"])",
       "layer_types has 1 entries for 16 layers"},
      {R"("block_multiple_of": 256)", R"("block_multiple_of": 0)", "block_multiple_of 0"},
      {R"("num_key_value_heads": 8)", R"("num_key_value_heads": 5)", "heads 16, kv heads 5"},
      {R"("rope_theta": 1000000.0)",
       R"("rope_theta": 1000000.0, "rope_scaling": {"rope_type": "yarn"})", "'yarn'"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kLfm2_350m, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

// LiquidAI/LFM2-8B-A1B's config.json (docs/model-lfm2.md "LFM2-MoE" says which fields are verified
// where): 24 layers, attention at 2, 6, 10, 14, 18, 21.
constexpr const char* kLfm2_8b_a1b = R"({
  "architectures": ["Lfm2MoeForCausalLM"], "bos_token_id": 1, "conv_L_cache": 3,
  "conv_bias": false, "dtype": "bfloat16", "eos_token_id": 7, "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 7168,
  "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention",
                  "conv", "conv", "conv", "full_attention", "conv", "conv", "conv",
                  "full_attention", "conv", "conv", "conv", "full_attention", "conv", "conv",
                  "full_attention", "conv", "conv"],
  "max_position_embeddings": 128000, "model_type": "lfm2_moe", "moe_intermediate_size": 1792,
  "norm_eps": 1e-05, "norm_topk_prob": true, "num_attention_heads": 32, "num_dense_layers": 2,
  "num_experts": 32, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8,
  "pad_token_id": 0, "rope_theta": 1000000.0, "routed_scaling_factor": 1.0,
  "tie_word_embeddings": true, "use_cache": true, "use_expert_bias": true, "vocab_size": 65536})";

// 18 conv windows of 2 × 2048 f32 and 6 attention layers of 8 kv heads of 64; each malformed MoE
// field is an error that names it.
TEST(StateSizes, Lfm2MoeSizesAndErrors) {
  auto layout = state_layout_from_config(kLfm2_8b_a1b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 24u);
  EXPECT_EQ(layout->kv_bytes_per_token(), 12288);  // 6·2·8·64·2
  EXPECT_EQ(layout->fixed_bytes(), 294912);        // 18 · (3 - 1) · 2048 · 4
  auto with = [](std::string text, std::string_view from, std::string_view to) {
    const std::size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return text.replace(pos, from.size(), to);
  };
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("num_experts_per_tok": 4)", R"("num_experts_per_tok": 33)", "num_experts_per_tok 33"},
      {R"("num_experts": 32)", R"("num_experts": 0)", "num_experts 0"},
      {R"("moe_intermediate_size": 1792)", R"("moe_intermediate_size": 0)",
       "moe_intermediate_size 0"},
      {R"("num_dense_layers": 2)", R"("num_dense_layers": -1)", "num_dense_layers -1"},
      {R"("routed_scaling_factor": 1.0)", R"("routed_scaling_factor": Infinity)",
       "routed_scaling_factor"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kLfm2_8b_a1b, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

TEST(StateSizes, UnknownModelTypeListsSupported) {
  auto r = state_layout_from_config(R"({"model_type":"gpt_bigcode"})");
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("unsupported model_type 'gpt_bigcode'; supported: " + supported_model_types()),
            std::string::npos)
      << m;
}

// Found by fuzz_config_json: out-of-range sizes in a config made the families allocate billions of
// layers, overflow int64 (expand, head_dim = hidden_size / heads) or cast 1e300 to an integer
// (fuzz/regressions/fuzz_config_json). Each is now one clear error.
TEST(StateSizes, OutOfRangeSizesAreErrors) {
  auto with = [](std::string text, std::string_view from, std::string_view to) {
    std::size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return text.replace(pos, from.size(), to);
  };
  struct Case {
    const char* config;
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {kMamba2_130m, R"("num_hidden_layers": 24)", R"("num_hidden_layers": 2000000000)",
       "beyond any supported model"},
      {kMamba2_130m, R"("expand": 2)", R"("expand": -9223372036854775808)",
       "expand must be positive"},
      {kMamba2_130m, R"("state_size": 128)", R"("state_size": 1048576)",
       "beyond any supported model"},
      {kQwen3_06b, R"("num_hidden_layers": 28)", R"("num_hidden_layers": 4611686018427387904)",
       "beyond any supported model"},
      {kQwen3_06b, R"("vocab_size": 151936)", R"("vocab_size": 2097152)",
       "beyond any supported model"},
      {kQwen35_08b, R"("num_hidden_layers": 24)", R"("num_hidden_layers": 4611686018427387904)",
       "beyond any supported model"},
      {kQwen35_08b, R"("partial_rotary_factor": 0.25, "rope_theta")",
       R"("partial_rotary_factor": 1e300, "rope_theta")", "partial_rotary_factor"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(c.config, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // hidden_size / num_attention_heads when head_dim is absent: INT64_MIN / -1 used to trap.
  auto r = state_layout_from_config(with(
      with(with(kQwen3_06b, R"("hidden_size": 1024)", R"("hidden_size": -9223372036854775808)"),
           R"("num_attention_heads": 16)", R"("num_attention_heads": -1)"),
      R"("head_dim": 128, )", ""));
  EXPECT_FALSE(r.is_ok());
}

TEST(StateSizes, DerivesScheduleFromIntervalWhenLayerTypesAbsent) {
  auto layout = state_layout_from_config(kQwen35_08b);
  ASSERT_TRUE(layout.is_ok());
  // kQwen35_08b has no layer_types: the schedule came from full_attention_interval = 4.
  EXPECT_EQ(layout->layers[3].kind, LayerStateSpec::Kind::kAttention);
  EXPECT_EQ(layout->layers[2].kind, LayerStateSpec::Kind::kRecurrent);
}

// qwen3_5 parses its keys with qwen3_next's (qwen3_5_hybrid.cc): a bad one is named.
TEST(StateSizes, Qwen35ConfigErrorsNameTheKey) {
  auto with = [](std::string text, std::string_view from, std::string_view to) {
    const std::size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return text.replace(pos, from.size(), to);
  };
  std::string types = R"("layer_types": ["linear_attention", "mamba")";
  for (int i = 2; i < 24; ++i) types += R"(, "full_attention")";
  types += "], ";
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("linear_num_key_heads": 16)", R"("linear_num_key_heads": 0)",
       "linear_num_key_heads must be positive"},
      {R"("linear_conv_kernel_dim": 4)", R"("linear_conv_kernel_dim": 0)",
       "linear_conv_kernel_dim must be positive"},
      {R"("intermediate_size": 3584)", R"("intermediate_size": 0)",
       "intermediate_size must be positive"},
      {R"("intermediate_size": 3584)", R"("intermediate_size": 2097152)",
       "beyond any supported model"},
      {R"("linear_num_value_heads": 16)", R"("linear_num_value_heads": 24)", "linear heads 16/24"},
      {R"("full_attention_interval": 4, )", types, "layer_types[1] 'mamba' is not one of"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kQwen35_08b, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

TEST(StateSizes, RopeScalingIsRefused) {
  std::string cfg = kQwen3_06b;
  cfg.replace(cfg.find("\"rms_norm_eps\""), 0,
              R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0}, )");
  auto r = state_layout_from_config(cfg);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("rope_scaling.rope_type 'yarn' is not supported"),
            std::string::npos)
      << r.status().message();
}

// google/gemma-3-1b-it's config.json: 26 layers, every sixth global (sliding_window_pattern), the
// others keep a 512-token ring; 1 kv head of 256, bf16.
constexpr const char* kGemma3_1b = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
  "vocab_size": 262144})";

TEST(StateSizes, Gemma3RingsAndGlobalLayers) {
  auto layout = state_layout_from_config(kGemma3_1b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 26u);
  for (std::size_t i = 0; i < 26; ++i) {
    EXPECT_EQ(layout->layers[i].window, i % 6 == 5 ? 0 : 512) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 4096);  // 4 global layers · 2 · 1 · 256 · 2
  EXPECT_EQ(layout->fixed_bytes(), 11534336);     // 22 rings · 512 tokens · 1024 B
  EXPECT_FALSE(layout->truncatable());
  // Below the window a ring holds every token; past it, its window.
  EXPECT_EQ(*snapshot_bytes_from_config(kGemma3_1b, 100), 100 * 4096 + 22 * 100 * 1024);
  EXPECT_EQ(*snapshot_bytes_from_config(kGemma3_1b, 1000), 1000 * 4096 + 11534336);
}

// gemma-3-4b-it style: Gemma3ForConditionalGeneration whose text_config names only what differs
// from Gemma3TextConfig's defaults (8 heads, 4 kv heads, head_dim 256, pattern 6).
TEST(StateSizes, Gemma3WrapperTakesTextConfigDefaults) {
  auto layout = state_layout_from_config(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16"})");
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 34u);
  EXPECT_EQ(layout->layers[0].n_kv_heads, 4);
  EXPECT_EQ(layout->layers[0].window, 1024);
  EXPECT_EQ(layout->layers[5].window, 0);
  EXPECT_EQ(layout->kv_bytes_per_token(), 5 * 4096);
  EXPECT_EQ(layout->fixed_bytes(), 29 * 1024 * 4096);
}

TEST(StateSizes, Gemma3UnsupportedKeysAreNamed) {
  auto with = [](std::string_view from, std::string_view to) {
    std::string text = kGemma3_1b;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::pair<std::string, std::string_view> cases[] = {
      {with(R"("attn_logit_softcapping": null)", R"("attn_logit_softcapping": 50.0)"),
       "attn_logit_softcapping"},
      {with(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "yarn", "factor": 2})"),
       "rope_scaling.rope_type 'yarn'"},
      {with(R"("gelu_pytorch_tanh")", R"("silu")"), "hidden_activation 'silu'"},
      {with(R"("sliding_window": 512)", R"("sliding_window": 0)"), "sliding_window"},
      {with(R"("sliding_window_pattern": 6)", R"("layer_types": ["full_attention"])"),
       "layer_types has 1 entries for 26 layers"},
  };
  for (const auto& [config, error] : cases) {
    auto r = state_layout_from_config(config);
    ASSERT_FALSE(r.is_ok()) << error;
    EXPECT_NE(r.status().message().find(error), std::string::npos) << r.status().message();
  }
}

// openai/gpt-oss-20b's config.json (keys recur reads, as released).
constexpr const char* kGptOss20b = R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "eos_token_id": 200002,
  "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "intermediate_size": 2880,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8,
  "num_local_experts": 32,
  "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn",
      "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                   "original_max_position_embeddings": 4096, "rope_type": "yarn",
                   "truncate": false},
  "rope_theta": 150000, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 201088})";

// 12 full layers of 8 kv heads x 64 (bf16) grow with the tokens; 12 sliding layers hold rings of
// their 128-token window.
TEST(StateSizes, GptOssRingsAndFullLayers) {
  auto layout = state_layout_from_config(kGptOss20b);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 24u);
  for (std::size_t i = 0; i < 24; ++i) EXPECT_EQ(layout->layers[i].window, i % 2 == 0 ? 128 : 0);
  EXPECT_EQ(layout->kv_bytes_per_token(), 12 * 2 * 8 * 64 * 2);
  EXPECT_EQ(layout->fixed_bytes(), 12 * 128 * 2 * 8 * 64 * 2);
}

TEST(StateSizes, GptOssErrorsNameTheKey) {
  auto with = [](std::string_view from, std::string_view to) {
    std::string text = kGptOss20b;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::pair<std::string, std::string_view> cases[] = {
      {with(R"("hidden_size": 2880)", R"("hidden_size": 2890)"), "multiples of 32"},
      {with(R"("rope_type": "yarn")", R"("rope_type": "longrope")"),
       "rope_scaling.rope_type 'longrope'"},
      {with(R"("swiglu_limit": 7.0)", R"("swiglu_limit": 0.0)"), "swiglu_limit"},
      {with(R"("attention_bias": true)", R"("attention_bias": false)"), "attention_bias false"},
      {with(R"("num_experts_per_tok": 4)", R"("num_experts_per_tok": 33)"),
       "num_experts_per_tok 33"},
      {with(R"("original_max_position_embeddings": 4096)",
            R"("original_max_position_embeddings": -1)"),
       "original_max_position_embeddings must be positive"},
      {with(R"("hidden_act": "silu")", R"("hidden_act": "gelu")"), "hidden_act 'gelu'"},
  };
  for (const auto& [config, error] : cases) {
    auto r = state_layout_from_config(config);
    ASSERT_FALSE(r.is_ok()) << error;
    EXPECT_NE(r.status().message().find(error), std::string::npos) << r.status().message();
  }
  // rope_scaling null: plain RoPE, as GptOssConfig allows.
  EXPECT_TRUE(
      state_layout_from_config(with(R"("rope_scaling": {)", R"("rope_scaling": null, "x": {)"))
          .is_ok());
}

// HuggingFaceTB/SmolLM3-3B's config.json (keys recur reads, as released) but with 8 layers.
constexpr const char* kSmolLm3 = R"({
  "architectures": ["SmolLM3ForCausalLM"], "attention_bias": false, "hidden_act": "silu",
  "hidden_size": 2048, "intermediate_size": 11008,
  "layer_types": ["full_attention", "full_attention", "full_attention", "full_attention",
                  "full_attention", "full_attention", "full_attention", "full_attention"],
  "max_position_embeddings": 65536, "mlp_bias": false, "model_type": "smollm3",
  "no_rope_layer_interval": 4, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0],
  "num_attention_heads": 16, "num_hidden_layers": 8, "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 5000000.0, "sliding_window": null,
  "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 128256})";

// SmolLM3Config's defaults fill a bare config (36 layers, 4 kv heads of 2048 / 16 = 128; an
// explicit null num_key_value_heads means num_attention_heads); with use_sliding_window and no
// layer_types the NoPE layers (every 4th) slide.
TEST(StateSizes, SmolLm3DefaultsAndWindows) {
  auto bare = state_layout_from_config(R"({"model_type": "smollm3"})");
  ASSERT_TRUE(bare.is_ok()) << bare.status().to_string();
  EXPECT_EQ(bare->layers.size(), 36u);
  EXPECT_EQ(bare->kv_bytes_per_token(), 36 * 2 * 4 * 128 * 2);
  auto mha = state_layout_from_config(R"({"model_type": "smollm3", "num_key_value_heads": null})");
  ASSERT_TRUE(mha.is_ok()) << mha.status().to_string();
  EXPECT_EQ(mha->kv_bytes_per_token(), 36 * 2 * 16 * 128 * 2);
  auto layout = state_layout_from_config(kSmolLm3);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  EXPECT_EQ(layout->kv_bytes_per_token(), 8 * 2 * 4 * 128 * 2);
  auto sliding = state_layout_from_config(
      R"({"model_type": "smollm3", "use_sliding_window": true, "sliding_window": 64,
          "num_hidden_layers": 8})");
  ASSERT_TRUE(sliding.is_ok()) << sliding.status().to_string();
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(sliding->layers[i].window, i % 4 == 3 ? 64 : 0);
  // use_sliding_window false: no window even where layer_types says sliding_attention.
  std::string off = kSmolLm3;
  off.replace(off.find("\"full_attention\""), 16, "\"sliding_attention\"");
  auto none = state_layout_from_config(off);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_EQ(none->layers[0].window, 0);
}

TEST(StateSizes, SmolLm3ErrorsNameTheKey) {
  auto with = [](std::string_view from, std::string_view to) {
    std::string text = kSmolLm3;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::pair<std::string, std::string_view> cases[] = {
      {with(R"("no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0])", R"("no_rope_layers": [1, 1, 0])"),
       "no_rope_layers has 3 entries for 8 layers"},
      {with(R"("rope_scaling": null)", R"("rope_scaling": {"type": "yarn", "factor": 2.0})"),
       "rope_scaling.type 'yarn'"},
      {with(R"("hidden_act": "silu")", R"("hidden_act": "gelu")"), "hidden_act 'gelu'"},
      {with(R"("full_attention", "full_attention"],)", R"("full_attention"],)"),
       "layer_types has 7 entries for 8 layers"},
      {with(R"("full_attention", "full_attention"],)", R"("full_attention", "chunked"],)"),
       "layer_types[7] is 'chunked'"},
      {with(R"("num_key_value_heads": 4)", R"("num_key_value_heads": 3)"), "kv heads 3"},
  };
  for (const auto& [config, error] : cases) {
    auto r = state_layout_from_config(config);
    ASSERT_FALSE(r.is_ok()) << error;
    EXPECT_NE(r.status().message().find(error), std::string::npos) << r.status().message();
  }
  // Keys that need others beside them.
  const std::pair<std::string, std::string_view> bare_cases[] = {
      {R"({"model_type": "smollm3", "no_rope_layer_interval": 0})",
       "no_rope_layer_interval must be positive"},
      {R"({"model_type": "smollm3", "use_sliding_window": true, "num_hidden_layers": 2,
           "layer_types": ["sliding_attention", "full_attention"]})",
       "sliding_window is null"},
      {R"({"model_type": "smollm3", "use_sliding_window": true, "sliding_window": 0})",
       "sliding_window must be positive"},
      {R"({"model_type": "smollm3", "rope_parameters": {"rope_type": "linear", "factor": 2}})",
       "rope_parameters.rope_type 'linear'"},
  };
  for (const auto& [config, error] : bare_cases) {
    auto r = state_layout_from_config(config);
    ASSERT_FALSE(r.is_ok()) << error;
    EXPECT_NE(r.status().message().find(error), std::string::npos) << r.status().message();
  }
}

TEST(StateSizes, BadGeometryIsAnError) {
  auto r = state_layout_from_config(
      R"({"model_type":"mamba2","hidden_size":768,"num_hidden_layers":2,"vocab_size":10,
          "num_heads":25,"head_dim":64,"n_groups":1})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("num_heads 25"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace recur::model
