// The real-geometry presets (Qwen3-0.6B, Qwen3.5-0.8B, mamba2-130m) checked by table and config
// without writing hundreds of MB; the scale of generated weights; and thread-count independence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "expected_tables.h"
#include "modelgen/families.h"
#include "modelgen/tokenizer_gen.h"
#include "st_reader.h"
#include "util/thread_pool.h"

namespace recur::modelgen {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::Table;

Table table_of(const std::vector<GenTensor>& gen) {
  Table t;
  for (const auto& g : gen)
    t[g.entry.name] = {g.entry.shape, convert::safetensors_dtype(g.entry.dtype)};
  return t;
}

std::vector<GenTensor> table_of_geometry(const Geometry& g) {
  auto t = tensor_table(g, DType::kBF16);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? *t : std::vector<GenTensor>{};
}

std::int64_t n_params(const std::vector<GenTensor>& gen) {
  std::int64_t n = 0;
  for (const auto& g : gen) n += g.entry.n_elems();
  return n;
}

Geometry geometry(Family family, const std::string& preset) {
  auto g = resolve_geometry({.family = family, .preset = preset}, generated_tokenizer().n_tokens());
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? *g : Geometry{};
}

// Every key of the reference config (model-families.md) must be present with the same value,
// except the token ids, which name tokens of our own tokenizer.
void expect_superset(const Json& got, const Json& reference, const std::vector<std::string>& skip) {
  for (const auto& [key, value] : reference.items()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    ASSERT_TRUE(got.contains(key)) << key;
    EXPECT_EQ(got[key], value) << key;
  }
}

TEST(RealPresets, Qwen3_0_6B) {
  const Geometry g = geometry(Family::kQwen3, "qwen3-0.6b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 311u);
  EXPECT_EQ(n_params(gen), 751632384);
  EXPECT_EQ(testing::table_diff(table_of(gen), testing::qwen3_table(28, 1024, 2048, 1024, 128, 3072,
                                                                    151936, "BF16")),
            "");
  const Json reference = Json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  expect_superset(got, reference, {"bos_token_id", "eos_token_id"});
  EXPECT_EQ(got.size(), reference.size());
}

// HuggingFaceTB/SmolLM3-3B's config.json (docs/model-smollm3.md), field for field, with the real
// tokenizer's ids; tied (no tie_word_embeddings key, no lm_head), no head_dim key.
TEST(RealPresets, SmolLm3_3B) {
  const BpeTokenizer& tok = kSmolLm3Files.tokenizer("smollm3-3b");
  EXPECT_EQ(tok.ids.begin_of_text, 128000);
  EXPECT_EQ(tok.ids.im_end, 128012);
  EXPECT_EQ(tok.n_tokens(), 128256);
  auto g = resolve_geometry({.family = Family::kSmolLm3, .preset = "smollm3-3b"}, tok.n_tokens());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto gen = table_of_geometry(*g);
  EXPECT_EQ(gen.size(), 326u);
  EXPECT_EQ(n_params(gen), 3075098624);
  EXPECT_EQ(testing::table_diff(table_of(gen), testing::llama_table(36, 2048, 2048, 512, 11008,
                                                                    128256, /*tied=*/true,
                                                                    /*bias=*/false, "BF16")),
            "");
  Json no_rope = Json::array();
  for (int i = 0; i < 36; ++i) no_rope.push_back(i % 4 == 3 ? 0 : 1);
  Json reference = Json::parse(R"({
    "architectures": ["SmolLM3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 11008, "max_position_embeddings": 65536, "max_window_layers": 28,
    "mlp_bias": false, "model_type": "smollm3", "no_rope_layer_interval": 4,
    "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4,
    "pad_token_id": 128004, "pretraining_tp": 2, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 5000000.0, "sliding_window": null, "torch_dtype": "bfloat16",
    "transformers_version": "4.54.0.dev0", "use_cache": false, "use_sliding_window": false,
    "vocab_size": 128256})");
  reference["no_rope_layers"] = no_rope;
  reference["layer_types"] = Json(std::vector<std::string>(36, "full_attention"));
  const Json got = Json::parse(config_json(*g, DType::kBF16, tok.ids));
  expect_superset(got, reference, {});
  EXPECT_FALSE(got.contains("tie_word_embeddings"));
  EXPECT_FALSE(got.contains("head_dim"));
  EXPECT_EQ(got.size(), reference.size() + 1);  // + initializer_range
}

TEST(RealPresets, Qwen3_5_0_8B) {
  const Geometry g = geometry(Family::kQwen3_5, "qwen3.5-0.8b");
  const auto gen = table_of_geometry(g);
  // 488 in the real file, less 15 mtp.* and 153 vision tensors that are not generated.
  EXPECT_EQ(gen.size(), 320u);
  EXPECT_EQ(testing::table_diff(table_of(gen), testing::qwen3_5_table({.layers = 24,
                                                                       .d = 1024,
                                                                       .heads = 8,
                                                                       .kv_heads = 2,
                                                                       .hd = 256,
                                                                       .ff = 3584,
                                                                       .vocab = 248320,
                                                                       .hk = 16,
                                                                       .hv = 16,
                                                                       .dk = 128,
                                                                       .dv = 128,
                                                                       .kernel = 4},
                                                                      "BF16")),
            "");
  // Spot checks straight from the table in section 2.3.
  const Table t = table_of(gen);
  EXPECT_EQ(t.at("model.language_model.layers.0.linear_attn.in_proj_qkv.weight").shape,
            (testing::Shape{6144, 1024}));
  EXPECT_EQ(t.at("model.language_model.layers.3.self_attn.q_proj.weight").shape,
            (testing::Shape{4096, 1024}));
  EXPECT_EQ(t.at("model.language_model.layers.22.linear_attn.conv1d.weight").shape,
            (testing::Shape{6144, 1, 4}));
  const Json reference = Json::parse(R"({
    "attention_bias": false, "attention_dropout": 0.0, "attn_output_gate": true,
    "bos_token_id": null, "dtype": "bfloat16", "eos_token_id": 248044,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3584,
    "layer_types": [
      "linear_attention","linear_attention","linear_attention","full_attention",
      "linear_attention","linear_attention","linear_attention","full_attention",
      "linear_attention","linear_attention","linear_attention","full_attention",
      "linear_attention","linear_attention","linear_attention","full_attention",
      "linear_attention","linear_attention","linear_attention","full_attention",
      "linear_attention","linear_attention","linear_attention","full_attention"],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 16, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_5_text",
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false,
    "num_attention_heads": 8, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "pad_token_id": null, "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-06,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
                        "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                        "rope_type": "default"},
    "tie_word_embeddings": true, "use_cache": true, "vocab_size": 248320})");
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  EXPECT_EQ(got["model_type"], "qwen3_5");
  EXPECT_EQ(got["tie_word_embeddings"], true);
  // mtp_num_hidden_layers is 0: the generator writes no mtp.* tensors.
  expect_superset(got["text_config"], reference, {"eos_token_id", "mtp_num_hidden_layers"});
  EXPECT_EQ(got["text_config"]["mtp_num_hidden_layers"], 0);
}

TEST(RealPresets, Mamba2_130m) {
  const Geometry g = geometry(Family::kMamba2, "mamba2-130m");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 218u);
  EXPECT_EQ(n_params(gen), 128989632);
  // d_inner 1536, conv_dim 1792, in_proj 3352 rows (section 4.1).
  EXPECT_EQ(testing::table_diff(table_of(gen),
                                testing::mamba2_table(24, 768, 24, 1536, 1792, 50288, "BF16")),
            "");
  std::string text = config_json(g, DType::kBF16, generated_tokenizer().ids);
  ASSERT_NE(text.find("Infinity"), std::string::npos);
  text.replace(text.find("Infinity"), 8, "1e300");
  const Json got = Json::parse(text);
  const Json reference = Json::parse(R"({
    "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2",
    "hidden_size": 768, "num_hidden_layers": 24, "vocab_size": 50288,
    "num_heads": 24, "head_dim": 64, "expand": 2, "state_size": 128, "n_groups": 1,
    "conv_kernel": 4, "chunk_size": 256, "use_bias": false, "use_conv_bias": true,
    "hidden_act": "silu", "layer_norm_epsilon": 1e-05, "rms_norm": true, "residual_in_fp32": true,
    "time_step_rank": 48, "time_step_min": 0.001, "time_step_max": 0.1, "time_step_floor": 0.0001,
    "time_step_limit": [0.0, 1e300], "tie_word_embeddings": true,
    "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0})");
  expect_superset(got, reference, {"bos_token_id", "eos_token_id", "pad_token_id"});
}

// meta-llama/Llama-3.2-1B-Instruct: 146 tensors (tied: no lm_head), 1,235,814,400 parameters,
// the config.json field for field (token ids included: the preset's tokenizer puts the special
// tokens at Llama 3's ids), and the tokenizer's special ids.
TEST(RealPresets, Llama_3_2_1B) {
  const BpeTokenizer& tok = family_tokenizer(Family::kLlama, "llama-3.2-1b");
  EXPECT_EQ(tok.n_tokens(), 128256);
  EXPECT_EQ(tok.ids.begin_of_text, 128000);
  EXPECT_EQ(tok.added[6].content, "<|start_header_id|>");
  EXPECT_EQ(tok.added[10].content, "<|python_tag|>");
  EXPECT_EQ(tok.added[255].content, "<|reserved_special_token_247|>");
  auto g = resolve_geometry({.family = Family::kLlama, .preset = "llama-3.2-1b"}, tok.n_tokens());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto gen = table_of_geometry(*g);
  EXPECT_EQ(gen.size(), 146u);
  EXPECT_EQ(n_params(gen), 1235814400);
  EXPECT_EQ(testing::table_diff(table_of(gen), testing::llama_table(16, 2048, 2048, 512, 8192,
                                                                    128256, true, false, "BF16")),
            "");
  const Json reference = Json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})");
  const Json got = Json::parse(config_json(*g, DType::kBF16, tok.ids));
  expect_superset(got, reference, {});
  EXPECT_EQ(got.size(), reference.size());
  const Json gen_config = Json::parse(generation_config_json(*g, tok.ids));
  EXPECT_EQ(gen_config["eos_token_id"], Json::array({128001, 128008, 128009}));
  EXPECT_EQ(gen_config["bos_token_id"], 128000);
}

// LiquidAI/LFM2-350M: 148 tensors (tied: no lm_head), 354,483,968 parameters (the model card's
// figure), block_ff_dim 6656 adjusted to a 4608-wide MLP, attention on layers 2, 5, 8, 10, 12,
// 14, the config.json field for field, and LFM2's token ids (bos 1, eos 7, pad 0).
TEST(RealPresets, Lfm2_350M) {
  const Lfm2Tokenizer& tok = lfm2_tokenizer("lfm2-350m");
  EXPECT_EQ(tok.n_tokens(), 65536);
  EXPECT_EQ(tok.vocab[1], "<|startoftext|>");
  EXPECT_EQ(tok.vocab[6], "<|im_start|>");
  EXPECT_EQ(tok.vocab[7], "<|im_end|>");
  EXPECT_EQ(tok.vocab[10], "<|tool_call_start|>");
  auto g = resolve_geometry({.family = Family::kLfm2, .preset = "lfm2-350m"}, tok.n_tokens());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto gen = table_of_geometry(*g);
  EXPECT_EQ(gen.size(), 148u);
  EXPECT_EQ(n_params(gen), 354483968);
  EXPECT_EQ(
      testing::table_diff(table_of(gen), testing::lfm2_table(16, 1024, 16, 8, 64, 4608, 3, 65536,
                                                             {2, 5, 8, 10, 12, 14}, false, "BF16")),
      "");
  const Json reference = Json::parse(R"({
    "architectures": ["Lfm2ForCausalLM"], "block_auto_adjust_ff_dim": true, "block_dim": 1024,
    "block_ff_dim": 6656, "block_ffn_dim_multiplier": 1.0, "block_mlp_init_scale": 1.0,
    "block_multiple_of": 256, "block_norm_eps": 1e-05, "block_out_init_scale": 1.0,
    "block_use_swiglu": true, "block_use_xavier_init": true, "bos_token_id": 1,
    "conv_L_cache": 3, "conv_bias": false, "conv_dim": 1024, "conv_dim_out": 1024,
    "conv_use_xavier_init": true, "eos_token_id": 7, "full_attn_idxs": [2, 5, 8, 10, 12, 14],
    "hidden_size": 1024, "initializer_range": 0.02, "max_position_embeddings": 128000,
    "model_type": "lfm2", "norm_eps": 1e-05, "num_attention_heads": 16, "num_heads": 16,
    "num_hidden_layers": 16, "num_key_value_heads": 8, "pad_token_id": 0, "rope_theta": 1000000.0,
    "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0", "use_cache": true,
    "use_pos_enc": true, "vocab_size": 65536})");
  const Json got = Json::parse(config_json(*g, DType::kBF16, tok.ids));
  expect_superset(got, reference, {});
  EXPECT_EQ(got.size(), reference.size());
  const Json gen_config = Json::parse(generation_config_json(*g, tok.ids));
  EXPECT_EQ(gen_config["eos_token_id"], 7);
  EXPECT_EQ(gen_config["bos_token_id"], 1);
}

TEST(RealPresets, FamilyIsDerivedNeverMixed) {
  auto g = resolve_geometry({.family = Family::kQwen3_5, .preset = "qwen3-0.6b"}, 1009);
  EXPECT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("does not fit"), std::string::npos);
}

// ---- weight scales: read a generated f32 tiny checkpoint back

struct Stats {
  double mean = 0, std = 0, min = 1e30, max = -1e30;
};

Stats stats(const testing::StFile& f, const std::string& name) {
  const auto& t = f.tensors.at(name);
  const std::int64_t n = (t.end - t.begin) / (t.dtype == "F32" ? 4 : 2);
  Stats s;
  double sum = 0, sq = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = f.value(name, i);
    sum += v, sq += v * v;
    s.min = std::min(s.min, v), s.max = std::max(s.max, v);
  }
  s.mean = sum / n;
  s.std = std::sqrt(std::max(0.0, sq / n - s.mean * s.mean));
  return s;
}

class WeightScale : public ::testing::Test {
 protected:
  testing::StFile write(const GenSpec& spec) {
    dir_ = fs::temp_directory_path() / fmt::format("recur-modelgen-w-{}", ::getpid());
    EXPECT_TRUE(write_checkpoint(spec, dir_.string()).is_ok());
    return testing::read_safetensors(dir_ / "model.safetensors");
  }
  ~WeightScale() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(WeightScale, Qwen3_5) {
  const auto f =
      write({.family = Family::kQwen3_5, .dtype = DType::kF32, .layers = 8, .hidden_size = 256});
  const std::string p = "model.language_model.layers.";
  const Stats q = stats(f, p + "3.self_attn.q_proj.weight");
  EXPECT_NEAR(q.std, 1.0 / 16, 0.003);  // N(0, 1/sqrt(d)), d = 256
  EXPECT_NEAR(q.mean, 0.0, 0.003);
  const Stats o = stats(f, p + "3.self_attn.o_proj.weight");  // fan_in 16*32, 8 layers
  EXPECT_NEAR(o.std, 1.0 / std::sqrt(512.0) / 4.0, 0.001);
  const Stats zc = stats(f, p + "0.input_layernorm.weight");  // zero-centred: (1 + w)
  EXPECT_NEAR(zc.mean, 0.0, 0.01);
  EXPECT_LT(std::max(-zc.min, zc.max), 0.15);
  const Stats gn = stats(f, p + "0.linear_attn.norm.weight");  // plain: near 1
  EXPECT_NEAR(gn.mean, 1.0, 0.02);
  const Stats a_log = stats(f, p + "0.linear_attn.A_log");
  EXPECT_GE(a_log.min, std::log(0.02));
  EXPECT_LE(a_log.max, 0.0);
  // Decay exp(-exp(A_log) * softplus(dt_bias)) at a = 0 is inside (0, 1) for every head.
  const auto& dt = f.tensors.at(p + "0.linear_attn.dt_bias");
  for (std::int64_t h = 0; h < dt.shape[0]; ++h) {
    const double decay = std::exp(-std::exp(f.value(p + "0.linear_attn.A_log", h)) *
                                  std::log1p(std::exp(f.value(p + "0.linear_attn.dt_bias", h))));
    EXPECT_GT(decay, 0.5);
    EXPECT_LT(decay, 1.0);
  }
}

TEST_F(WeightScale, Mamba2) {
  const auto f = write({.family = Family::kMamba2, .dtype = DType::kF32});
  const std::string p = "backbone.layers.1.mixer.";
  const Stats a_log = stats(f, p + "A_log");
  EXPECT_GE(a_log.min, 0.0);
  EXPECT_LE(a_log.max, std::log(16.0));
  const Stats d = stats(f, p + "D");
  EXPECT_EQ(d.min, 1.0);
  EXPECT_EQ(d.max, 1.0);
  for (std::int64_t h = 0; h < 8; ++h) {
    const double dt = std::log1p(std::exp(f.value(p + "dt_bias", h)));  // softplus
    EXPECT_GE(dt, 0.001 * 0.999);
    EXPECT_LE(dt, 0.1 * 1.001);
  }
  EXPECT_NEAR(stats(f, "backbone.norm_f.weight").mean, 1.0, 0.02);
  EXPECT_NEAR(stats(f, "backbone.embeddings.weight").std, 2.0 / 8, 0.01);
}

// Qwen/Qwen3-30B-A3B: 30.5B parameters (128 experts of 3 x 768 x 2048 on each of 48 layers), the
// config.json field for field. Run with --layers N; the table is checked without writing it.
TEST(RealPresets, Qwen3_30B_A3B) {
  const Geometry g = geometry(Family::kQwen3Moe, "qwen3-30b-a3b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 1u + 48u * (8u + 1u + 3u * 128u) + 2u);
  EXPECT_EQ(n_params(gen), 30532122624);
  const Table t = table_of(gen);
  EXPECT_EQ(t.at("model.layers.47.mlp.gate.weight").shape, (std::vector<std::int64_t>{128, 2048}));
  EXPECT_EQ(t.at("model.layers.0.mlp.experts.127.down_proj.weight").shape,
            (std::vector<std::int64_t>{2048, 768}));
  EXPECT_EQ(t.at("model.layers.0.self_attn.k_proj.weight").shape,
            (std::vector<std::int64_t>{512, 2048}));
  EXPECT_EQ(t.count("model.layers.0.mlp.gate_proj.weight"), 0u) << "every layer is sparse";
  const Json reference = Json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
    "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
    "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  expect_superset(got, reference, {"bos_token_id", "eos_token_id"});
  EXPECT_EQ(got.size(), reference.size());
}

// ibm-granite/granite-4.0-h-tiny: the "7B total" of the model card (6,939,037,248 here: 64
// experts of 3 x 512 x 1536 and a 1024-wide shared MLP on each of 40 layers, 36 Mamba2 and 4
// attention mixers, a tied 100352-row embedding), the config.json as granite_test's derivation
// of it (docs/model-granite.md: which fields are verified where).
TEST(RealPresets, GraniteTiny) {
  const Geometry g = geometry(Family::kGraniteMoe, "granite-4.0-h-tiny");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 1u + 36u * 15u + 4u * 11u + 1u);
  EXPECT_EQ(n_params(gen), 6939037248);
  const Table t = table_of(gen);
  const auto shape = [&](const std::string& name) { return t.at(name).shape; };
  using S = std::vector<std::int64_t>;
  EXPECT_EQ(shape("model.layers.0.block_sparse_moe.input_linear.weight"), (S{64, 1024, 1536}));
  EXPECT_EQ(shape("model.layers.0.block_sparse_moe.output_linear.weight"), (S{64, 1536, 512}));
  EXPECT_EQ(shape("model.layers.39.block_sparse_moe.router.layer.weight"), (S{64, 1536}));
  EXPECT_EQ(shape("model.layers.5.shared_mlp.input_linear.weight"), (S{2048, 1536}));
  EXPECT_EQ(shape("model.layers.5.self_attn.q_proj.weight"), (S{1536, 1536}));
  EXPECT_EQ(shape("model.layers.0.mamba.in_proj.weight"), (S{6448, 1536}));
  EXPECT_EQ(t.count("lm_head.weight"), 0u) << "tied";
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  const Json want = Json::parse(R"({
        "hidden_size": 1536, "num_hidden_layers": 40, "num_attention_heads": 12,
        "num_key_value_heads": 4, "intermediate_size": 512, "shared_intermediate_size": 1024,
        "num_local_experts": 64, "num_experts_per_tok": 6, "vocab_size": 100352,
        "tie_word_embeddings": true, "mamba_d_state": 128, "mamba_n_groups": 1,
        "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_expand": 2, "mamba_d_conv": 4,
        "mamba_chunk_size": 256, "max_position_embeddings": 131072, "embedding_multiplier": 12.0,
        "logits_scaling": 6.0, "rms_norm_eps": 1e-05, "attention_multiplier": 0.0078125,
        "residual_multiplier": 0.22, "position_embedding_type": "nope",
        "model_type": "granitemoehybrid"})");
  for (const auto& [key, value] : want.items()) {
    EXPECT_EQ(got.at(key), value) << key;
  }
  std::vector<std::string> types;
  for (int i = 0; i < 40; ++i) {
    types.push_back(i == 5 || i == 15 || i == 25 || i == 35 ? "attention" : "mamba");
  }
  EXPECT_EQ(got.at("layer_types"), Json(types));
}

// LiquidAI/LFM2-8B-A1B: the model card's "8.3B total" (8,339,930,560 here: 32 experts of
// 3 x 1792 x 2048 on 22 layers, two dense 7168-wide layers, 18 conv and 6 attention mixers, a tied
// 65536-row embedding), a tensor per expert as the release, the config.json as config_test's.
TEST(RealPresets, Lfm2_8B_A1B) {
  const Geometry g = geometry(Family::kLfm2Moe, "lfm2-8b-a1b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 2302u);
  EXPECT_EQ(n_params(gen), 8339930560);
  const Table t = table_of(gen);
  const auto shape = [&](const std::string& name) { return t.at(name).shape; };
  using S = std::vector<std::int64_t>;
  EXPECT_EQ(shape("model.layers.1.feed_forward.w1.weight"), (S{7168, 2048}));
  EXPECT_EQ(shape("model.layers.2.feed_forward.experts.31.w2.weight"), (S{2048, 1792}));
  EXPECT_EQ(shape("model.layers.23.feed_forward.gate.weight"), (S{32, 2048}));
  EXPECT_EQ(shape("model.layers.23.feed_forward.expert_bias"), (S{32}));
  EXPECT_EQ(t.at("model.layers.23.feed_forward.expert_bias").dtype, "F32");
  EXPECT_EQ(shape("model.layers.21.self_attn.out_proj.weight"), (S{2048, 2048}));
  EXPECT_EQ(t.count("model.layers.2.feed_forward.w1.weight"), 0u) << "sparse from layer 2";
  const Json reference = Json::parse(R"({
    "architectures": ["Lfm2MoeForCausalLM"], "bos_token_id": 1, "conv_L_cache": 3,
    "conv_bias": false, "dtype": "bfloat16", "eos_token_id": 7, "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 7168,
    "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention",
                    "conv", "conv", "conv", "full_attention", "conv", "conv", "conv",
                    "full_attention", "conv", "conv", "conv", "full_attention", "conv", "conv",
                    "full_attention", "conv", "conv"],
    "max_position_embeddings": 128000, "model_type": "lfm2_moe", "moe_intermediate_size": 1792,
    "norm_eps": 1e-05, "norm_topk_prob": true, "num_attention_heads": 32,
    "num_dense_layers": 2, "num_experts": 32, "num_experts_per_tok": 4,
    "num_hidden_layers": 24, "num_key_value_heads": 8, "pad_token_id": 0,
    "rope_theta": 1000000.0, "routed_scaling_factor": 1.0, "tie_word_embeddings": true,
    "transformers_version": "4.57.0.dev0", "use_cache": true, "use_expert_bias": true,
    "vocab_size": 65536})");
  const Json got = Json::parse(config_json(g, DType::kBF16, lfm2_tokenizer("lfm2-8b-a1b").ids));
  expect_superset(got, reference, {});
  EXPECT_EQ(got.size(), reference.size());
}

// Qwen/Qwen3-Next-80B-A3B-Instruct: 79.67B parameters without the MTP layer; with it (one MoE
// layer, one attention block, fc [2048, 4096] and three norms) 81.32B, the release's 81.3B. The
// table has 74,391 tensors, the release's 75,944 less the MTP layer's 1,553. The config.json field
// for field (model-families.md 3.1).
TEST(RealPresets, Qwen3Next80BA3B) {
  const Geometry g = geometry(Family::kQwen3Next, "qwen3-next-80b-a3b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 74391u);
  EXPECT_EQ(n_params(gen), 79674391296);
  const Table t = table_of(gen);
  const auto shape = [&](const std::string& name) { return t.at(name).shape; };
  using S = std::vector<std::int64_t>;
  EXPECT_EQ(shape("model.layers.0.linear_attn.in_proj_qkvz.weight"), (S{12288, 2048}));
  EXPECT_EQ(shape("model.layers.0.linear_attn.in_proj_ba.weight"), (S{64, 2048}));
  EXPECT_EQ(shape("model.layers.0.linear_attn.conv1d.weight"), (S{8192, 1, 4}));
  EXPECT_EQ(shape("model.layers.0.linear_attn.out_proj.weight"), (S{2048, 4096}));
  EXPECT_EQ(t.at("model.layers.0.linear_attn.A_log").dtype, "BF16");
  EXPECT_EQ(shape("model.layers.3.self_attn.q_proj.weight"), (S{8192, 2048}));
  EXPECT_EQ(shape("model.layers.47.mlp.gate.weight"), (S{512, 2048}));
  EXPECT_EQ(shape("model.layers.47.mlp.experts.511.down_proj.weight"), (S{2048, 512}));
  EXPECT_EQ(shape("model.layers.47.mlp.shared_expert.up_proj.weight"), (S{512, 2048}));
  EXPECT_EQ(shape("model.layers.47.mlp.shared_expert_gate.weight"), (S{1, 2048}));
  EXPECT_EQ(shape("lm_head.weight"), (S{151936, 2048}));
  const Json reference = Json::parse(R"({
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
    "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.57.0.dev0", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  expect_superset(got, reference, {"bos_token_id", "eos_token_id"});
  EXPECT_EQ(got.size(), reference.size());
}

// Qwen/Qwen3.5-35B-A3B's text model: 34.66B parameters without the vision tower and the MTP
// layer; its text_config's geometry (40 layers, full attention every 4th, 256 experts of 512
// with 8 per token, a shared expert of 512, linear heads 16 k / 32 v, untied), as the public
// inventories of the release list it.
TEST(RealPresets, Qwen3_5_35B_A3B) {
  const Geometry g = geometry(Family::kQwen3_5Moe, "qwen3.5-35b-a3b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(n_params(gen), 34660610688);
  const Table t = table_of(gen);
  using S = std::vector<std::int64_t>;
  const std::string p = "model.language_model.layers.";
  EXPECT_EQ(t.at(p + "0.linear_attn.in_proj_qkv.weight").shape, (S{8192, 2048}));
  EXPECT_EQ(t.at(p + "0.linear_attn.in_proj_z.weight").shape, (S{4096, 2048}));
  EXPECT_EQ(t.at(p + "0.linear_attn.A_log").dtype, "F32");
  EXPECT_EQ(t.at(p + "39.self_attn.q_proj.weight").shape, (S{8192, 2048}));
  EXPECT_EQ(t.at(p + "39.mlp.gate.weight").shape, (S{256, 2048}));
  EXPECT_EQ(t.at(p + "39.mlp.experts.255.gate_proj.weight").shape, (S{512, 2048}));
  EXPECT_EQ(t.at(p + "39.mlp.shared_expert_gate.weight").shape, (S{1, 2048}));
  EXPECT_EQ(t.at("lm_head.weight").shape, (S{248320, 2048}));
  const Json got = Json::parse(config_json(g, DType::kBF16, generated_tokenizer().ids));
  EXPECT_EQ(got["model_type"], "qwen3_5_moe");
  EXPECT_EQ(got["architectures"], Json::parse(R"(["Qwen3_5MoeForConditionalGeneration"])"));
  const Json& text = got["text_config"];
  const Json reference = Json::parse(R"({
    "model_type": "qwen3_5_moe_text", "hidden_size": 2048, "num_hidden_layers": 40,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "router_aux_loss_coef": 0.001,
    "vocab_size": 248320, "tie_word_embeddings": false, "attn_output_gate": true,
    "mamba_ssm_dtype": "float32", "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
    "max_position_embeddings": 262144, "mlp_only_layers": [],
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10],
                        "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                        "rope_type": "default"}})");
  expect_superset(text, reference, {});
  EXPECT_FALSE(text.contains("intermediate_size"));
  EXPECT_FALSE(text.contains("decoder_sparse_step"));
  EXPECT_FALSE(text.contains("norm_topk_prob"));
  EXPECT_EQ(text["layer_types"].size(), 40u);
  EXPECT_EQ(text["layer_types"][39], "full_attention");
  EXPECT_EQ(text["layer_types"][38], "linear_attention");
}

// nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: the "31.6B total" (31,577,940,288 here: 23 MoE
// blocks of 128 un-gated experts of 2 x 1856 x 2688 and a 3712-wide shared expert, 23 Mamba2 and 6
// attention blocks, an untied 131072-row head), a tensor per expert and the correction bias in f32
// as released, the config.json field for field.
TEST(RealPresets, Nemotron3Nano30BA3B) {
  const Geometry g = geometry(Family::kNemotronH, "nemotron-3-nano-30b-a3b");
  const auto gen = table_of_geometry(g);
  EXPECT_EQ(gen.size(), 3u + 23u * 9u + 23u * (1u + 2u + 2u * 128u + 2u) + 6u * 5u);
  EXPECT_EQ(n_params(gen), 31577940288);
  const Table t = table_of(gen);
  using S = std::vector<std::int64_t>;
  const std::string p = "backbone.layers.";
  EXPECT_EQ(t.at(p + "1.mixer.gate.weight").shape, (S{128, 2688}));
  EXPECT_EQ(t.at(p + "1.mixer.gate.e_score_correction_bias").shape, (S{128}));
  EXPECT_EQ(t.at(p + "1.mixer.gate.e_score_correction_bias").dtype, "F32");
  EXPECT_EQ(t.at(p + "51.mixer.experts.127.up_proj.weight").shape, (S{1856, 2688}));
  EXPECT_EQ(t.at(p + "51.mixer.experts.0.down_proj.weight").shape, (S{2688, 1856}));
  EXPECT_EQ(t.at(p + "51.mixer.shared_experts.up_proj.weight").shape, (S{3712, 2688}));
  EXPECT_EQ(t.at(p + "5.mixer.v_proj.weight").shape, (S{256, 2688}));
  EXPECT_EQ(t.at(p + "0.mixer.in_proj.weight").shape, (S{10304, 2688}));
  EXPECT_EQ(t.at("lm_head.weight").shape, (S{131072, 2688}));
  EXPECT_EQ(t.count(p + "1.mixer.experts.0.gate_proj.weight"), 0u);
  const Json reference = Json::parse(R"({
    "architectures": ["NemotronHForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2,
    "head_dim": 128, "hidden_dropout": 0.0, "hidden_size": 2688,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "initializer_range": 0.02, "intermediate_size": 1856, "layer_norm_epsilon": 1e-05,
    "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 64,
    "mamba_proj_bias": false, "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 262144, "mlp_bias": false, "mlp_hidden_act": "relu2",
    "model_type": "nemotron_h", "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_group": 1, "n_groups": 8,
    "n_routed_experts": 128, "n_shared_experts": 1, "norm_eps": 1e-05, "norm_topk_prob": true,
    "num_attention_heads": 32, "num_experts_per_tok": 6, "num_hidden_layers": 52,
    "num_key_value_heads": 2, "num_logits_to_keep": 1, "pad_token_id": 0,
    "partial_rotary_factor": 1.0, "rescale_prenorm_residual": true, "residual_in_fp32": false,
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "sliding_window": null,
    "ssm_state_size": 128, "tie_word_embeddings": false, "time_step_floor": 0.0001,
    "time_step_max": 0.1, "time_step_min": 0.001, "topk_group": 1, "torch_dtype": "bfloat16",
    "transformers_version": "4.55.4", "use_bias": false, "use_cache": true,
    "use_conv_bias": true, "use_mamba_kernels": true, "vocab_size": 131072})");
  const Json got = Json::parse(config_json(g, DType::kBF16, nemotron_h_tokenizer().ids));
  expect_superset(got, reference, {"bos_token_id", "eos_token_id", "pad_token_id"});
  EXPECT_EQ(got.size(), reference.size());
  // --layers keeps a prefix of the pattern.
  auto cut = resolve_geometry(
      {.family = Family::kNemotronH, .preset = "nemotron-3-nano-30b-a3b", .layers = 6},
      nemotron_h_tokenizer().n_tokens());
  ASSERT_TRUE(cut.is_ok()) << cut.status().to_string();
  EXPECT_EQ(cut->block_pattern, "MEMEM*");
}

}  // namespace
}  // namespace recur::modelgen
