// recur bench's cost model: the bytes a decode step reads come from the tensors the model loads,
// not from the checkpoint's size (a tied Qwen3 checkpoint carries an lm_head nobody reads).
#include "app/bench_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "model/model.h"
#include "modelgen/generator.h"

namespace recur::app {
namespace {

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::path(::testing::TempDir()) / ("recur_app_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<model::Model> load_generated(const TempDir& dir, modelgen::Family family) {
  modelgen::GenSpec spec;
  spec.family = family;
  const std::string out = dir.file(modelgen::family_name(family));
  EXPECT_TRUE(modelgen::write_checkpoint(spec, out).is_ok());
  auto m = model::Model::load(out);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return std::move(*m);
}

// Sum of 2-D tensors by hand from the geometry: layer matrices once, the (tied) head once.
TEST(ModelCost, TiedQwen3CountsTheEmbeddingOnceNotTheRedundantLmHead) {
  TempDir dir;
  auto m = load_generated(dir, modelgen::Family::kQwen3);
  ASSERT_NE(m, nullptr);
  double layer_bytes = 0, embed_bytes = 0, lm_head_in_model = 0;
  for (const auto& t : m->tensors()) {
    if (t.shape.size() != 2) continue;
    if (t.name.find("embed_tokens") != std::string::npos) {
      embed_bytes += static_cast<double>(t.n_bytes);
    } else if (t.name.find("lm_head") != std::string::npos) {
      lm_head_in_model += static_cast<double>(t.n_bytes);
    } else {
      layer_bytes += static_cast<double>(t.shape[0] * t.shape[1] * 2);  // bf16
    }
  }
  ASSERT_GT(embed_bytes, 0);
  EXPECT_EQ(lm_head_in_model, 0) << "a tied model reads no lm_head";
  const ModelCost cost = model_cost(*m);
  EXPECT_EQ(cost.decode_step_bytes, layer_bytes + embed_bytes);
  // The checkpoint holds more: the redundant lm_head and the norms.
  EXPECT_GT(static_cast<double>(m->weight_bytes()), cost.decode_step_bytes + embed_bytes * 0.99);
  EXPECT_EQ(cost.flops_per_token, layer_bytes);  // 2 FLOPs per bf16 weight = its 2 bytes
}

// From config.json: every attention layer's query heads x head_dim, 4 FLOPs each (q·k and p·V
// multiply-adds) per key a query sees; recurrent layers none.
TEST(ModelCost, AttentionFlopsCountEveryKeyEachQuerySees) {
  TempDir dir;
  for (auto family :
       {modelgen::Family::kQwen3, modelgen::Family::kQwen3_5, modelgen::Family::kMamba2}) {
    auto m = load_generated(dir, family);
    ASSERT_NE(m, nullptr);
    double per_key = 0;
    if (family != modelgen::Family::kMamba2) {  // (whose config.json has a bare Infinity)
      std::ifstream in(dir.file(modelgen::family_name(family)) + "/config.json");
      std::stringstream text;
      text << in.rdbuf();
      const auto root = nlohmann::json::parse(text.str());
      const auto& config = root.contains("text_config") ? root["text_config"] : root;
      const std::int64_t layers = config["num_hidden_layers"];
      const std::int64_t interval = config.value("full_attention_interval", 1);
      const std::int64_t attention_layers = layers / interval;
      per_key = 4.0 * static_cast<double>(attention_layers) *
                config["num_attention_heads"].get<double>() * config["head_dim"].get<double>();
      ASSERT_GT(per_key, 0);
    }
    const ModelCost cost = model_cost(*m);
    EXPECT_EQ(cost.attention_flops_per_key, per_key) << modelgen::family_name(family);
    // Three tokens after two: they see 3, 4 and 5 keys.
    EXPECT_EQ(cost.attention_flops(3, 2), per_key * 12);
    EXPECT_EQ(cost.attention_flops(1, 0), per_key);
  }
}

// Gemma 3's sliding-window layers see at most their window: the tiny preset has two layers with a
// 16-token window and one global layer, 4 heads of 32 (512 FLOPs per key and layer).
TEST(ModelCost, SlidingWindowLayersCountOnlyTheirWindow) {
  TempDir dir;
  auto m = load_generated(dir, modelgen::Family::kGemma3);
  ASSERT_NE(m, nullptr);
  const ModelCost cost = model_cost(*m);
  EXPECT_EQ(cost.attention_flops_per_key, 3 * 512.0);
  EXPECT_EQ(cost.attention_flops(3, 2), 3 * 512.0 * 12);  // all inside the window
  // Three tokens after 20: the global layer sees 21 + 22 + 23 keys, each sliding one 3 x 16.
  EXPECT_EQ(cost.attention_flops(3, 20), 512.0 * 66 + 2 * 512.0 * 48);
  ThreadPool pool(2);
  DecodeBench bench(*m, pool, 3, 70, 32);
  EXPECT_GT(bench.step(), 0.0);
  // 72 tokens of the global layer's K/V (256 B each) and both rings' 16, per sequence.
  EXPECT_EQ(bench.state_bytes_per_step(), 3.0 * (72 * 256 + 2 * 16 * 256));
}

TEST(BenchPrefill, TimesThePromptAfterTheRestoredPrefix) {
  TempDir dir;
  ThreadPool pool(2);
  auto m = load_generated(dir, modelgen::Family::kQwen3_5);
  ASSERT_NE(m, nullptr);
  const ModelCost cost = model_cost(*m);
  // A 70-token prefix prefilled in chunks of 32, then two timed prefills of 5 tokens after it.
  const PrefillResult p = bench_prefill(*m, pool, 5, 70, 32, 2);
  EXPECT_EQ(p.prefix_tokens, 70);
  ASSERT_GT(p.seconds, 0);
  EXPECT_DOUBLE_EQ(p.tokens_per_s, 5 / p.seconds);
  EXPECT_DOUBLE_EQ(p.flops_per_s, (5 * cost.flops_per_token + cost.head_flops) / p.seconds);
  EXPECT_DOUBLE_EQ(p.flops_with_attention_per_s,
                   p.flops_per_s + cost.attention_flops(5, 70) / p.seconds);
}

TEST(DecodeBench, StepsAfterTheContextAndReportsStateTraffic) {
  TempDir dir;
  ThreadPool pool(2);
  for (auto family : {modelgen::Family::kQwen3_5, modelgen::Family::kMamba2}) {
    auto m = load_generated(dir, family);
    ASSERT_NE(m, nullptr);
    // 70 tokens of context, prefilled in chunks of 32, 32 and 6, then the untimed warm-up step.
    DecodeBench bench(*m, pool, 3, 70, 32);
    EXPECT_GT(bench.step(), 0.0);
    // Recurrent state is read and written each step, and the KV of all 72 tokens read, for every
    // sequence.
    const model::StateLayout& layout = m->state_layout();
    EXPECT_EQ(bench.state_bytes_per_step(),
              3.0 * (2.0 * static_cast<double>(layout.fixed_bytes()) +
                     72.0 * static_cast<double>(layout.kv_bytes_per_token())));
  }
}

}  // namespace
}  // namespace recur::app
