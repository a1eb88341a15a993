// Granite 4.0-H specifics: the real granite-4.0-h-350m config's state sizes, its config errors
// (each naming the key), granite-4.0-h-tiny's (the MoE variant) state sizes and expert errors,
// MLX's stacked switch_mlp experts loading as the fused input_linear / output_linear, and MLX's
// split MLP (mlp.{gate,up,down}_proj, mlx-lm sanitize) loading to the same logits, byte for byte,
// as the fused shared_mlp.input_linear it was cut from, plain and MLX-quantized.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

namespace fs = std::filesystem;
using testing::make_checkpoint;
using testing::TempDir;

// ibm-granite/granite-4.0-h-350m's config.json (the fields the loader reads, as released).
constexpr const char* kGranite350m = R"({
  "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
  "attention_bias": false, "attention_dropout": 0.0, "attention_multiplier": 0.015625,
  "bos_token_id": 100257, "embedding_multiplier": 12, "eos_token_id": 100257,
  "hidden_act": "silu", "hidden_size": 768, "initializer_range": 0.1, "intermediate_size": 2048,
  "layer_types": ["mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "attention", "mamba", "mamba", "attention", "mamba", "mamba", "mamba",
                  "attention", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba"],
  "logits_scaling": 3, "mamba_chunk_size": 256, "mamba_conv_bias": true, "mamba_d_conv": 4,
  "mamba_d_head": 32, "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1,
  "mamba_n_heads": 48, "mamba_proj_bias": false, "max_position_embeddings": 32768,
  "normalization_function": "rmsnorm", "num_attention_heads": 12, "num_experts_per_tok": 0,
  "num_hidden_layers": 32, "num_key_value_heads": 4, "num_local_experts": 0,
  "output_router_logits": false, "pad_token_id": 100256, "position_embedding_type": "nope",
  "residual_multiplier": 0.246, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000,
  "router_aux_loss_coef": 0.01, "shared_intermediate_size": 2048, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 100352})";

// ibm-granite/granite-4.0-h-tiny's geometry (docs/model-granite.md says which fields are verified
// where) in the 350m's field set.
std::string granite_tiny_config() {
  std::string c = kGranite350m;
  const std::pair<std::string_view, std::string_view> edits[] = {
      {R"("attention_multiplier": 0.015625)", R"("attention_multiplier": 0.0078125)"},
      {R"("hidden_size": 768)", R"("hidden_size": 1536)"},
      {R"("intermediate_size": 2048)", R"("intermediate_size": 512)"},
      {R"("logits_scaling": 3)", R"("logits_scaling": 6)"},
      {R"("mamba_d_head": 32)", R"("mamba_d_head": 64)"},
      {R"("max_position_embeddings": 32768)", R"("max_position_embeddings": 131072)"},
      {R"("num_experts_per_tok": 0)", R"("num_experts_per_tok": 6)"},
      {R"("num_hidden_layers": 32)", R"("num_hidden_layers": 40)"},
      {R"("num_local_experts": 0)", R"("num_local_experts": 64)"},
      {R"("residual_multiplier": 0.246)", R"("residual_multiplier": 0.22)"},
      {R"("shared_intermediate_size": 2048)", R"("shared_intermediate_size": 1024)"},
  };
  for (auto [from, to] : edits) c.replace(c.find(from), from.size(), to);
  std::string types = R"("layer_types": [)";
  for (int i = 0; i < 40; ++i) {
    types += i == 5 || i == 15 || i == 25 || i == 35 ? R"("attention")" : R"("mamba")";
    types += i + 1 < 40 ? ", " : "]";
  }
  const std::size_t a = c.find(R"("layer_types")"), b = c.find(']', a);
  return c.replace(a, b + 1 - a, types);
}

std::string with(std::string text, std::string_view from, std::string_view to) {
  const std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? text : text.replace(pos, from.size(), to);
}

TEST(Granite, StateSizesOfTheRealConfig) {
  auto layout = state_layout_from_config(kGranite350m);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 32u);
  for (std::size_t i : {10u, 13u, 17u, 27u}) {
    EXPECT_EQ(layout->layers[i].kind, LayerStateSpec::Kind::kAttention) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 4096);  // 4 layers·2·4·64·2 (bf16 K/V)
  EXPECT_EQ(layout->fixed_bytes(), 22622208);     // 28 × (48·32·128 + 3·1792) f32
  EXPECT_FALSE(layout->truncatable());
  EXPECT_EQ(*snapshot_bytes_from_config(kGranite350m, 1000), 22622208 + 4096000);
}

TEST(Granite, ConfigErrorsNameTheKey) {
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("num_local_experts": 0)", R"("num_local_experts": 64)", "num_local_experts 64"},
      {R"("mamba_n_heads": 48)", R"("mamba_n_heads": 40)", "mamba_n_heads 40 x mamba_d_head 32"},
      {R"("logits_scaling": 3)", R"("logits_scaling": 0)", "logits_scaling"},
      {R"("residual_multiplier": 0.246)", R"("residual_multiplier": Infinity)",
       "residual_multiplier"},
      {R"("position_embedding_type": "nope")", R"("position_embedding_type": "alibi")",
       "position_embedding_type 'alibi'"},
      {R"("mamba", "mamba", "mamba", "mamba"])", R"("mamba", "mamba", "mamba", "moe"])",
       "layer_types holds 'moe'"},
      {R"("hidden_act": "silu")", R"("hidden_act": "gelu")", "hidden_act 'gelu'"},
      {R"("mamba_d_state": 128)", R"("mamba_d_state": 1048576)", "beyond any supported model"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(kGranite350m, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
  // "auto" head size: expand · hidden / heads = 32, as written out.
  auto a = state_layout_from_config(
      with(kGranite350m, R"("mamba_d_head": 32)", R"("mamba_d_head": "auto")"));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->fixed_bytes(), 22622208);
}

TEST(Granite, MoeStateSizesAndExpertErrors) {
  const std::string tiny = granite_tiny_config();
  auto layout = state_layout_from_config(tiny);
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  ASSERT_EQ(layout->layers.size(), 40u);
  for (std::size_t i : {5u, 15u, 25u, 35u}) {
    EXPECT_EQ(layout->layers[i].kind, LayerStateSpec::Kind::kAttention) << i;
  }
  EXPECT_EQ(layout->kv_bytes_per_token(), 8192);  // 4 layers·2·4·128·2 (bf16 K/V)
  EXPECT_EQ(layout->fixed_bytes(), 58060800);     // 36 × (48·64·128 + 3·3328) f32
  struct Case {
    std::string_view from, to, error;
  };
  const Case cases[] = {
      {R"("num_experts_per_tok": 6)", R"("num_experts_per_tok": 0)", "num_experts_per_tok 0"},
      {R"("num_experts_per_tok": 6)", R"("num_experts_per_tok": 65)", "num_experts_per_tok 65"},
      {R"("num_local_experts": 64)", R"("num_local_experts": 5000)", "num_local_experts 5000"},
      {R"("num_local_experts": 64)", R"("num_local_experts": -1)", "num_local_experts"},
      {R"("intermediate_size": 512)", R"("intermediate_size": 0)", "intermediate_size 0"},
  };
  for (const Case& c : cases) {
    auto r = state_layout_from_config(with(tiny, c.from, c.to));
    ASSERT_FALSE(r.is_ok()) << c.to;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

// Copies `src` to `dst` with each layer's shared_mlp.input_linear.* ([2·ff, ...] rows) cut into
// mlp.gate_proj.* and mlp.up_proj.* and output_linear.* renamed mlp.down_proj.*, as mlx-lm's
// sanitize does; quantized codes, scales and biases are cut the same way (rows are rows).
void split_mlp(const std::string& src, const std::string& dst) {
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) {
    if (e.path().extension() != ".safetensors" &&
        e.path().filename() != "model.safetensors.index.json") {
      fs::copy_file(e.path(), fs::path(dst) / e.path().filename());
    }
  }
  auto ck = Checkpoint::open(src);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  nlohmann::json header;
  if (ck->mlx_format()) header["__metadata__"] = {{"format", "mlx"}};
  std::string data;
  auto put = [&](const std::string& name, const TensorInfo* t, std::size_t row0, std::size_t rows) {
    std::vector<std::int64_t> shape = t->shape;
    const std::size_t row_bytes = t->n_bytes / static_cast<std::size_t>(shape[0]);
    shape[0] = static_cast<std::int64_t>(rows);
    const std::size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t->data) + row0 * row_bytes, rows * row_bytes);
    header[name] = {
        {"dtype", t->dtype_text}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  };
  for (const std::string& name : ck->names()) {
    const TensorInfo* t = ck->find(name);
    const auto rows = static_cast<std::size_t>(t->shape.empty() ? 1 : t->shape[0]);
    const std::size_t in = name.find(".shared_mlp.input_linear.");
    const std::size_t out = name.find(".shared_mlp.output_linear.");
    if (in != std::string::npos) {
      const std::string head = name.substr(0, in), tail = name.substr(in + 25);
      put(head + ".mlp.gate_proj." + tail, t, 0, rows / 2);
      put(head + ".mlp.up_proj." + tail, t, rows / 2, rows / 2);
    } else if (out != std::string::npos) {
      put(name.substr(0, out) + ".mlp.down_proj." + name.substr(out + 26), t, 0, rows);
    } else {
      put(name, t, 0, rows);
    }
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(dst + "/model.safetensors", std::ios::binary);
  const std::uint64_t n = text.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << text << data;
}

std::vector<float> logits_of(const std::string& dir, const std::vector<std::int32_t>& tokens) {
  auto m = Model::load(dir, {.max_batch_tokens = 16, .max_logit_rows = 16});
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  if (!m.is_ok()) return {};
  ThreadPool pool(2);
  auto seq = (*m)->new_sequence();
  SeqChunk c{.seq = seq.get(), .tokens = tokens, .logits = LogitsWanted::kAll};
  auto got = (*m)->forward(pool, {&c, 1});
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  std::vector<float> out;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(tokens.size()); ++r) {
    const auto row = got->row(r);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(Granite, MlxSplitMlpLoadsToTheSameLogits) {
  TempDir tmp("granite_split");
  const std::vector<std::int32_t> tokens = {3, 141, 59, 26, 535, 89, 79, 323, 84, 62, 64};
  for (int bits : {0, 4}) {
    SCOPED_TRACE(bits);
    modelgen::GenSpec spec{.family = modelgen::Family::kGraniteHybrid,
                           .dtype = modelgen::DType::kBF16,
                           .seed = 3,
                           .bits = bits,
                           .group_size = 32};
    const std::string fused = tmp.file("fused" + std::to_string(bits));
    const std::string split = tmp.file("split" + std::to_string(bits));
    ASSERT_TRUE(modelgen::write_checkpoint(spec, fused).is_ok());
    split_mlp(fused, split);
    auto ck = Checkpoint::open(split);
    ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
    ASSERT_NE(ck->find("model.layers.0.mlp.up_proj.weight"), nullptr);
    ASSERT_EQ(ck->find("model.layers.0.shared_mlp.input_linear.weight"), nullptr);
    const std::vector<float> a = logits_of(fused, tokens), b = logits_of(split, tokens);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace recur::model
