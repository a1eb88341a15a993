// quantize_checkpoint: a generated bf16 checkpoint converts to what the generator writes with
// GenSpec::bits (names, shapes, dtypes, config, values up to the bf16 rounding of the source);
// other files are copied; every refusal names its problem.
#include "modelgen/quantize.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kernels/quant.h"
#include "mlx_testing.h"
#include "modelgen/mlx_layout.h"

namespace recur::modelgen {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::read_safetensors;
using testing::slurp;
using testing::StFile;
using testing::TempDir;

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// A generated bf16 checkpoint with the extra files a downloaded one has.
fs::path make_hf(const fs::path& dir, Family family, int shards = 1) {
  const Status s = write_checkpoint({.family = family, .seed = 11, .shards = shards}, dir.string());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  write_text(dir / "chat_template.jinja", "{{ messages }}");
  write_text(dir / "README.md", "# model card");
  write_text(dir / "pytorch_model.bin", "old weights");
  return dir;
}

using Params = std::tuple<Family, int>;  // family, bits

class Quantize : public ::testing::TestWithParam<Params> {
 protected:
  Family family() const { return std::get<0>(GetParam()); }
  int bits() const { return std::get<1>(GetParam()); }
};

TEST_P(Quantize, MatchesTheGeneratorsQuantizedCheckpoint) {
  TempDir tmp;
  const fs::path hf = make_hf(tmp.path() / "hf", family());
  QuantizeSummary summary;
  const Status s =
      quantize_checkpoint(hf.string(), (tmp.path() / "out").string(), bits(), 64, &summary);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const fs::path gen = tmp.path() / "gen";
  ASSERT_TRUE(
      write_checkpoint({.family = family(), .seed = 11, .bits = bits()}, gen.string()).is_ok());

  const StFile got = read_safetensors(tmp.path() / "out" / "model.safetensors");
  const StFile want = read_safetensors(gen / "model.safetensors");
  const StFile src = read_safetensors(hf / "model.safetensors");
  EXPECT_EQ(got.metadata, Json({{"format", "mlx"}}));
  EXPECT_EQ(testing::table_diff(testing::tensors_of(got), testing::tensors_of(want)), "");
  EXPECT_EQ(slurp(tmp.path() / "out" / "config.json"), slurp(gen / "config.json"));
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                           "chat_template.jinja", "README.md"}) {
    EXPECT_EQ(slurp(tmp.path() / "out" / file), slurp(hf / file)) << file;
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "out" / "pytorch_model.bin"));
  EXPECT_TRUE(fs::exists(tmp.path() / "out" / "model.safetensors.index.json"));

  // Values: floating tensors are the source's (folded norms up to one bf16 rounding); quantized
  // ones dequantize to within one step of the bf16 source.
  int n_scales = 0;
  for (const auto& [name, t] : got.tensors) {
    if (name.ends_with(".scales")) ++n_scales;
    if (t.dtype == "U32" || name.ends_with(".scales") || name.ends_with(".biases")) continue;
    const std::vector<float> a = testing::values(got, name), b = testing::values(want, name);
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], std::fabs(b[i]) / 128) << name << " " << i;
    }
  }
  for (const auto& [name, t] : got.tensors) {
    if (!name.ends_with(".scales")) continue;
    const std::string path = name.substr(0, name.size() - 7);
    const kernels::MlxQuantized w = testing::quantized_view(got, path, bits(), 64);
    const std::string hf_path =
        family() == Family::kQwen3_5 ? "model.language_model." + path.substr(21) : path;
    // Experts the source stores fused or stacked come out split per MLX's switch_mlp: those are
    // covered by the comparison with the generator's own quantized checkpoint above.
    if (!src.tensors.contains(hf_path + ".weight")) continue;
    const std::vector<float> source = testing::values(src, hf_path + ".weight");
    std::vector<float> row(static_cast<std::size_t>(w.cols));
    for (std::int64_t r = 0; r < w.rows; ++r) {
      kernels::dequantize_row(w, r, row.data());
      for (std::int64_t i = 0; i < w.cols; ++i) {
        const std::int64_t g = r * (w.cols / w.group_size) + i / 64;
        const float scale = std::fabs(kernels::load_as_f32(w.scales, w.dtype, g));
        const float bias = std::fabs(kernels::load_as_f32(w.biases, w.dtype, g));
        const float bound = scale * (1.0f + ((1 << bits()) - 1) / 256.0f) + bias / 256 + 1e-6f;
        ASSERT_LE(std::fabs(row[i] - source[r * w.cols + i]), bound) << path << " " << r;
      }
    }
  }

  EXPECT_EQ(summary.n_quantized, n_scales);
  EXPECT_EQ(summary.n_dropped, family() == Family::kQwen3 ? 1 : 0);  // the tied lm_head copy
  int n_weights = 0;  // output tensors other than the quantized ones' scales and biases
  for (const auto& [name, t] : got.tensors) {
    n_weights += !name.ends_with(".scales") && !name.ends_with(".biases");
  }
  EXPECT_EQ(summary.n_quantized + summary.n_kept, n_weights);
  // Stacked experts (Granite 4.0-H's input_linear) split into two outputs; elsewhere every
  // source tensor is one output or dropped.
  if (family() != Family::kGraniteMoe) {
    EXPECT_EQ(summary.n_quantized + summary.n_kept + summary.n_dropped,
              static_cast<int>(src.tensors.size()));
  }
  // Tiny geometries have matrices narrower than a group (routers, small projections): they are
  // written floating, as mlx-lm leaves them.
  for (const std::string& name : summary.not_divisible) {
    const std::string path = name.substr(0, name.rfind(".weight"));
    EXPECT_FALSE(got.tensors.contains(path + ".scales")) << name;
  }
  if (family() == Family::kQwen3 || family() == Family::kQwen3_5 || family() == Family::kMamba2) {
    EXPECT_TRUE(summary.not_divisible.empty());
  }
  EXPECT_EQ(summary.in_bytes, static_cast<std::int64_t>(src.bytes.size() - src.data_start()));
  std::int64_t out_bytes = 0;
  int n_files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path() / "out")) {
    out_bytes += static_cast<std::int64_t>(e.file_size());
    ++n_files;
  }
  EXPECT_EQ(summary.out_bytes, out_bytes);
  EXPECT_EQ(summary.n_files, n_files);
  EXPECT_GE(summary.seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, Quantize,
    ::testing::Combine(::testing::Values(Family::kQwen3, Family::kQwen3_5, Family::kMamba2,
                                         Family::kGemma3, Family::kLlama, Family::kQwen3Moe,
                                         Family::kGraniteHybrid, Family::kLfm2, Family::kNemotronH,
                                         Family::kFalconH1, Family::kQwen3_5Moe, Family::kQwen3Next,
                                         Family::kGraniteMoe, Family::kLfm2Moe),
                       ::testing::Values(4, 8)),
    [](const auto& p) {
      return fmt::format("{}_{}bit", family_name(std::get<0>(p.param)), std::get<1>(p.param));
    });

TEST(QuantizeCheckpoint, ShardedInputGivesTheSameWeights) {
  TempDir tmp;
  const fs::path one = make_hf(tmp.path() / "one", Family::kQwen3_5);
  const fs::path three = make_hf(tmp.path() / "three", Family::kQwen3_5, 3);
  ASSERT_TRUE(quantize_checkpoint(one.string(), (tmp.path() / "a").string(), 4, 32).is_ok());
  ASSERT_TRUE(quantize_checkpoint(three.string(), (tmp.path() / "b").string(), 4, 32).is_ok());
  EXPECT_EQ(slurp(tmp.path() / "a" / "model.safetensors"),
            slurp(tmp.path() / "b" / "model.safetensors"));
}

TEST(QuantizeCheckpoint, LeavesNonDividingWeightsFloatingAndCountsThem) {
  TempDir tmp;
  const fs::path hf = make_hf(tmp.path() / "hf", Family::kQwen3);
  QuantizeSummary summary;
  ASSERT_TRUE(
      quantize_checkpoint(hf.string(), (tmp.path() / "q").string(), 4, 128, &summary).is_ok());
  // d_model 64 and d_ff 192: only o_proj (cols 128) quantizes in groups of 128.
  EXPECT_EQ(summary.n_quantized, 2);
  EXPECT_EQ(summary.not_divisible.size(), 1u + 2 * 6);  // embedding; q, k, v, gate, up, down
  const StFile f = read_safetensors(tmp.path() / "q" / "model.safetensors");
  for (const std::string& name : summary.not_divisible) {
    EXPECT_EQ(f.tensors.at(name).dtype, "BF16") << name;
    EXPECT_FALSE(f.tensors.contains(name.substr(0, name.size() - 7) + ".scales")) << name;
  }
}

// The message of a refused conversion, which must contain `expected`; nothing is written.
void expect_refused(const std::string& in, const fs::path& out, int bits, int group,
                    const std::string& expected) {
  const Status s = quantize_checkpoint(in, out.string(), bits, group);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  for (const auto& e : fs::directory_iterator(out.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

TEST(QuantizeCheckpoint, RefusalsNameTheProblem) {
  TempDir tmp;
  const fs::path hf = make_hf(tmp.path() / "hf", Family::kMamba2);
  const fs::path out = tmp.path() / "out";
  expect_refused(hf.string(), out, 3, 64, "4 or 8");
  expect_refused(hf.string(), out, 4, 48, "32, 64 or 128");
  expect_refused((tmp.path() / "missing").string(), out, 4, 64, "not a checkpoint");
  expect_refused(hf.string(), hf, 4, 64, "is the input checkpoint");

  const fs::path busy = tmp.path() / "busy";
  fs::create_directories(busy);
  write_text(busy / "notes.txt", "keep me");
  expect_refused(hf.string(), busy, 4, 64, "refusing to replace it");
  EXPECT_EQ(slurp(busy / "notes.txt"), "keep me");

  ASSERT_TRUE(quantize_checkpoint(hf.string(), out.string(), 4, 64).is_ok());
  expect_refused(out.string(), tmp.path() / "again", 8, 64, "already quantized");

  // A config-only marker (e.g. a GPTQ checkpoint's quantization_config) is enough.
  const fs::path gptq = make_hf(tmp.path() / "gptq", Family::kQwen3);
  std::string config = slurp(gptq / "config.json");
  config.insert(config.find('{') + 1, R"("quantization_config": {"quant_method": "gptq"},)");
  write_text(gptq / "config.json", config);
  expect_refused(gptq.string(), tmp.path() / "o2", 4, 64, "already quantized");

  const fs::path other = make_hf(tmp.path() / "other", Family::kQwen3);
  config = slurp(other / "config.json");
  config.replace(config.find("\"qwen3\""), 7, "\"gpt_bigcode\"");
  write_text(other / "config.json", config);
  expect_refused(other.string(), tmp.path() / "o3", 4, 64, "model_type 'gpt_bigcode'");
}

TEST(AddQuantizationConfig, KeepsKeysOrderAndPythonLiterals) {
  const std::string text =
      R"({"z": 1, "limit": [0.0, Infinity], "s": "NaN in a string", "n": -Infinity})";
  auto out = add_quantization_config(text, {.bits = 8, .group_size = 32});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_LT(out->find("\"z\""), out->find("\"limit\""));
  EXPECT_NE(out->find("Infinity\n"), std::string::npos) << *out;
  EXPECT_NE(out->find("\"NaN in a string\""), std::string::npos);
  EXPECT_NE(out->find("\"n\": -Infinity"), std::string::npos) << *out;
  std::string strict = *out;
  for (std::size_t at; (at = strict.find("Infinity")) != std::string::npos;) {
    strict.replace(at, 8, "1e300");
  }
  const Json j = Json::parse(strict);
  EXPECT_EQ(j["quantization"], Json({{"bits", 8}, {"group_size", 32}, {"mode", "affine"}}));
  EXPECT_EQ(j["quantization_config"], j["quantization"]);

  EXPECT_FALSE(add_quantization_config("[1, 2]", {}).is_ok());
  const auto nested = add_quantization_config(R"({"text_config": {"quantization": {}}})", {});
  ASSERT_FALSE(nested.is_ok());
  EXPECT_NE(nested.status().message().find("already"), std::string::npos);
}

}  // namespace
}  // namespace recur::modelgen
