// quantize_checkpoint: a generated bf16 checkpoint converts to what the generator writes with
// GenSpec::bits (names, shapes, dtypes, config, values up to the bf16 rounding of the source);
// other files are copied; every refusal names its problem.
#include "convert/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "../modelgen/mlx_testing.h"
#include "convert/mlx_layout.h"
#include "convert/mlx_plan.h"
#include "kernels/quant.h"

namespace recur::modelgen {
namespace {

// recur quantize against the generator's own MLX checkpoints: both namespaces meet here.
using namespace recur::convert;  // NOLINT(google-build-using-namespace)

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

// "<p>experts.<e>.<proj>.weight" -> "<p>switch_mlp.<proj>.weight" (LFM2's w1 / w3 / w2 as
// gate_proj / up_proj / down_proj, as mlx-lm's lfm2_moe.py names them); "" for other names.
std::string switch_mlp_name(const std::string& name) {
  // Plain string parsing: GCC 12 with the sanitizers warns (-Werror) inside std::regex.
  constexpr std::string_view kExperts = ".experts.", kWeight = ".weight";
  const std::size_t at = name.rfind(kExperts);
  if (at == std::string::npos || !name.ends_with(kWeight)) return "";
  const std::size_t num = at + kExperts.size(), dot = name.find('.', num);
  if (dot == std::string::npos || dot == num ||
      !std::all_of(name.begin() + static_cast<std::ptrdiff_t>(num),
                   name.begin() + static_cast<std::ptrdiff_t>(dot),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return "";
  }
  const std::size_t end = name.size() - kWeight.size();  // where ".weight" starts
  if (dot + 1 >= end) return "";
  std::string proj = name.substr(dot + 1, end - dot - 1);
  if (proj.find('.') != std::string::npos) return "";
  if (proj == "w1") proj = "gate_proj";
  if (proj == "w3") proj = "up_proj";
  if (proj == "w2") proj = "down_proj";
  return name.substr(0, at + 1) + "switch_mlp." + proj + ".weight";
}

// The stacks the per-expert tensors of a Hugging Face checkpoint make, with their expert counts.
std::map<std::string, int> expert_stacks(const StFile& hf) {
  std::map<std::string, int> stacks;
  for (const auto& [name, t] : hf.tensors) {
    const std::string stacked = switch_mlp_name(name);
    if (!stacked.empty()) ++stacks[stacked];
  }
  return stacks;
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
  // The modules config.json lists (MoE routers) are at their own format.
  const Json quantization =
      testing::parse_config(tmp.path() / "out" / "config.json")["quantization"];
  for (const auto& [name, t] : got.tensors) {
    if (!name.ends_with(".scales")) continue;
    const std::string path = name.substr(0, name.size() - 7);
    const Json& q = quantization.contains(path) ? quantization[path] : quantization;
    const int b = q["bits"].get<int>(), group = q["group_size"].get<int>();
    const kernels::MlxQuantized w = testing::quantized_view(got, path, b, group);
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
        const std::int64_t g = r * (w.cols / w.group_size) + i / group;
        const float scale = std::fabs(kernels::load_as_f32(w.scales, w.dtype, g));
        const float bias = std::fabs(kernels::load_as_f32(w.biases, w.dtype, g));
        const float bound = scale * (1.0f + ((1 << b) - 1) / 256.0f) + bias / 256 + 1e-6f;
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
  // Stacked experts (Granite 4.0-H's input_linear) split into two outputs; per-expert ones
  // become one stack per projection; dense Granite's shared_mlp.input_linear splits into
  // mlp.gate_proj and mlp.up_proj; elsewhere every source tensor is one output or dropped.
  if (family() != Family::kGraniteMoe) {
    const std::map<std::string, int> stacks = expert_stacks(src);
    int n_expert_tensors = 0, n_split = 0;
    for (const auto& [name, n] : stacks) n_expert_tensors += n;
    for (const auto& [name, t] : src.tensors) {
      n_split +=
          family() == Family::kGraniteHybrid && name.ends_with("shared_mlp.input_linear.weight");
    }
    if (family() == Family::kGraniteHybrid) {
      EXPECT_GT(n_split, 0);
    }
    EXPECT_EQ(summary.n_quantized + summary.n_kept + summary.n_dropped,
              static_cast<int>(src.tensors.size()) - n_expert_tensors +
                  static_cast<int>(stacks.size()) + n_split);
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

// mlx-lm's quant_predicate of each MoE family (qwen3_moe.py, qwen3_next.py, qwen3_5.py,
// granitemoehybrid.py, lfm2_moe.py), written out here by the HF names of the tiny presets: the
// router (and Qwen3-Next / Qwen3.5-MoE's shared expert gate) at 8 bits in groups of 64 whatever
// the checkpoint's format, listed in config.json under its module path in layer order.
std::vector<std::string> eight_bit_modules(Family family, const StFile& hf) {
  std::vector<std::string> suffixes;
  switch (family) {
    case Family::kQwen3Moe:
      suffixes = {".mlp.gate.weight"};
      break;
    case Family::kQwen3Next:
    case Family::kQwen3_5Moe:
      suffixes = {".mlp.gate.weight", ".mlp.shared_expert_gate.weight"};
      break;
    case Family::kGraniteMoe:
      suffixes = {".block_sparse_moe.router.layer.weight"};
      break;
    case Family::kLfm2Moe:
      suffixes = {".feed_forward.gate.weight"};
      break;
    default:
      break;
  }
  std::vector<std::string> out;
  for (int layer = 0; layer < 64; ++layer) {
    for (const std::string& suffix : suffixes) {
      const std::string root = family == Family::kQwen3_5Moe ? "model.language_model." : "model.";
      const std::string hf_name = fmt::format("{}layers.{}{}", root, layer, suffix);
      if (!hf.tensors.contains(hf_name)) continue;
      const std::string mlx = family == Family::kQwen3_5Moe
                                  ? "language_model.model." + hf_name.substr(root.size())
                                  : hf_name;
      out.push_back(mlx.substr(0, mlx.size() - 7));
    }
  }
  return out;
}

class MoeRouters : public ::testing::TestWithParam<Family> {};

TEST_P(MoeRouters, AtEightBitsInGroupsOf64WithConfigOverrides) {
  TempDir tmp;
  const fs::path hf = make_hf(tmp.path() / "hf", GetParam());
  const StFile src = read_safetensors(hf / "model.safetensors");
  const std::vector<std::string> modules = eight_bit_modules(GetParam(), src);
  ASSERT_FALSE(modules.empty());
  for (const int bits : {4, 8}) {
    for (const int group : {32, 64}) {
      SCOPED_TRACE(fmt::format("{} bits, groups of {}", bits, group));
      const fs::path out = tmp.path() / fmt::format("q{}_{}", bits, group);
      ASSERT_TRUE(quantize_checkpoint(hf.string(), out.string(), bits, group).is_ok());
      const fs::path gen = tmp.path() / fmt::format("g{}_{}", bits, group);
      ASSERT_TRUE(
          write_checkpoint({.family = GetParam(), .seed = 11, .bits = bits, .group_size = group},
                           gen.string())
              .is_ok());
      EXPECT_EQ(slurp(out / "config.json"), slurp(gen / "config.json"));
      EXPECT_EQ(
          testing::table_diff(testing::tensors_of(read_safetensors(out / "model.safetensors")),
                              testing::tensors_of(read_safetensors(gen / "model.safetensors"))),
          "");
      const Json config = testing::parse_config(out / "config.json");
      const StFile got = read_safetensors(out / "model.safetensors");
      // group_size, bits and mode, then one entry per module, in the model's order.
      const auto ordered = nlohmann::ordered_json::parse(slurp(out / "config.json"));
      std::vector<std::string> keys;
      for (const auto& [key, value] : ordered["quantization"].items()) keys.push_back(key);
      std::vector<std::string> want_keys = {"group_size", "bits", "mode"};
      want_keys.insert(want_keys.end(), modules.begin(), modules.end());
      EXPECT_EQ(keys, want_keys);
      EXPECT_EQ(config["quantization_config"], config["quantization"]);
      for (const std::string& m : modules) {
        EXPECT_EQ(config["quantization"][m], Json({{"group_size", 64}, {"bits", 8}})) << m;
        const auto& scales = got.tensors.at(m + ".scales");
        const auto& codes = got.tensors.at(m + ".weight");
        const std::int64_t rows = scales.shape[0], cols = codes.shape[1] * 32 / 8;
        EXPECT_EQ(codes.dtype, "U32") << m;
        EXPECT_EQ(scales.shape, (std::vector<std::int64_t>{rows, cols / 64})) << m;
        EXPECT_EQ(codes.shape, (std::vector<std::int64_t>{rows, cols * 8 / 32})) << m;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MoeRouters,
                         ::testing::Values(Family::kQwen3Moe, Family::kQwen3Next,
                                           Family::kQwen3_5Moe, Family::kGraniteMoe,
                                           Family::kLfm2Moe),
                         [](const auto& p) { return std::string(family_name(p.param)); });

// mlx-lm's sanitize stacks per-expert tensors into switch_mlp (qwen3_moe.py, qwen3_next.py,
// qwen3_5_moe via qwen3_next.py / qwen3_5.py, lfm2_moe.py, which also renames the dense layers'
// w1 / w3 / w2): both writers do, each expert a slab of the stack with the source's rows.
class StackedExperts : public ::testing::TestWithParam<Family> {};

TEST_P(StackedExperts, PerExpertTensorsBecomeSwitchMlp) {
  TempDir tmp;
  const fs::path hf = make_hf(tmp.path() / "hf", GetParam());
  const StFile src = read_safetensors(hf / "model.safetensors");
  const std::map<std::string, int> stacks = expert_stacks(src);
  ASSERT_FALSE(stacks.empty());
  const fs::path out = tmp.path() / "q", gen = tmp.path() / "g";
  // Groups of 64: the experts' gate and up (64 inputs) are quantized, down (32) stays floating.
  ASSERT_TRUE(quantize_checkpoint(hf.string(), out.string(), 4, 64).is_ok());
  ASSERT_TRUE(
      write_checkpoint({.family = GetParam(), .seed = 11, .bits = 4}, gen.string()).is_ok());
  int n_floating = 0;
  for (const fs::path& dir : {out, gen}) {
    SCOPED_TRACE(dir.filename().string());
    const StFile got = read_safetensors(dir / "model.safetensors");
    for (const auto& [name, t] : got.tensors) {
      EXPECT_EQ(name.find(".experts."), std::string::npos) << name;
      EXPECT_EQ(name.find(".w1."), std::string::npos) << name;
    }
    for (const auto& [stacked, n] : stacks) {
      const std::string mlx = GetParam() == Family::kQwen3_5Moe
                                  ? "language_model.model." + stacked.substr(21)
                                  : stacked;
      ASSERT_TRUE(got.tensors.contains(mlx)) << mlx;
      const testing::StTensor& t = got.tensors.at(mlx);
      ASSERT_EQ(t.shape.size(), 3u) << mlx;
      EXPECT_EQ(t.shape[0], n) << mlx;
      const std::string path = mlx.substr(0, mlx.size() - 7);
      if (got.tensors.contains(path + ".scales")) {
        EXPECT_EQ(t.dtype, "U32");
        EXPECT_EQ(got.tensors.at(path + ".scales").shape[0], n) << mlx;
        continue;
      }
      // Floating (cols narrower than a group): expert e's slab holds the source expert's bytes.
      if (dir != out) continue;
      ++n_floating;
      const std::int64_t slab = (t.end - t.begin) / n;
      for (int e = 0; e < n; ++e) {
        std::string hf_name;
        for (const auto& [name, st] : src.tensors) {
          if (switch_mlp_name(name) == stacked &&
              name.find(fmt::format(".experts.{}.", e)) != std::string::npos) {
            hf_name = name;
          }
        }
        ASSERT_FALSE(hf_name.empty()) << stacked << " " << e;
        const testing::StTensor& s = src.tensors.at(hf_name);
        EXPECT_EQ(got.bytes.substr(got.data_start() + t.begin + e * slab, slab),
                  src.bytes.substr(src.data_start() + s.begin, s.end - s.begin))
            << hf_name;
      }
    }
  }
  EXPECT_GT(n_floating, 0);
}

INSTANTIATE_TEST_SUITE_P(Families, StackedExperts,
                         ::testing::Values(Family::kQwen3Moe, Family::kQwen3Next,
                                           Family::kQwen3_5Moe, Family::kLfm2Moe),
                         [](const auto& p) { return std::string(family_name(p.param)); });

// The dense families' predicates (none, or none without experts: qwen3_5.py) list nothing.
TEST(QuantizeCheckpoint, DenseFamiliesHaveNoOverrides) {
  TempDir tmp;
  for (const Family family : {Family::kQwen3, Family::kQwen3_5, Family::kGraniteHybrid}) {
    const fs::path out = tmp.path() / family_name(family);
    ASSERT_TRUE(write_checkpoint({.family = family, .bits = 4}, out.string()).is_ok());
    const Json q = testing::parse_config(out / "config.json")["quantization"];
    EXPECT_EQ(q, Json({{"group_size", 64}, {"bits", 4}, {"mode", "affine"}}))
        << family_name(family);
  }
}

// mlx-lm walks the model's list of layers: layer 2 before layer 10, each layer's router before
// its shared expert gate. A router whose cols divide by the checkpoint's group but not by 64
// stays floating (mlx-lm's quantizer would fail on it) and is not listed.
TEST(MlxOverrides, InTheOrderOfTheModelsLayers) {
  const MlxRules rules{
      .family = model::family_for_type("qwen3_next"), .tied = false, .format = {4, 32}};
  const std::int64_t shape[] = {8, 64}, narrow[] = {8, 96};
  std::vector<MlxTensor> tensors;
  for (const char* name :
       {"model.layers.10.mlp.gate.weight", "model.layers.2.mlp.gate_proj.weight",
        "model.layers.2.mlp.shared_expert_gate.weight", "model.layers.2.mlp.gate.weight"}) {
    tensors.push_back(mlx_tensor(rules, name, shape, DType::kBF16));
  }
  const MlxTensor odd = mlx_tensor(rules, "model.layers.3.mlp.gate.weight", narrow, DType::kBF16);
  EXPECT_TRUE(odd.not_divisible);
  EXPECT_EQ(odd.action, MlxAction::kCopy);
  tensors.push_back(odd);
  EXPECT_EQ(tensors[1].format.bits, 4);  // an expert's projection keeps the checkpoint's format
  std::vector<std::string> paths;
  for (const ModuleFormat& m : mlx_overrides(tensors)) {
    paths.push_back(m.path);
    EXPECT_EQ(m.format.bits, 8);
    EXPECT_EQ(m.format.group_size, 64);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"model.layers.2.mlp.gate",
                                             "model.layers.2.mlp.shared_expert_gate",
                                             "model.layers.10.mlp.gate"}));
}

// mlx-lm drops the multi-token-prediction head of Qwen3-Next as of Qwen3.5 and loads strictly:
// recur quantize drops it for both (it kept Qwen3-Next's once).
TEST(MlxTensor, TheMtpHeadIsDroppedForEveryFamily) {
  const std::int64_t shape[] = {8, 64};
  for (const char* type : {"qwen3_next", "qwen3_5_moe", "qwen3_5", "qwen3"}) {
    const MlxRules rules{.family = model::family_for_type(type), .tied = false, .format = {4, 32}};
    for (const char* name : {"mtp.fc.weight", "mtp.layers.0.mlp.experts.0.up_proj.weight",
                             "model.language_model.mtp.fc.weight"}) {
      EXPECT_EQ(mlx_tensor(rules, name, shape, DType::kBF16).action, MlxAction::kDrop)
          << type << " " << name;
    }
    EXPECT_NE(mlx_tensor(rules, "model.layers.0.mlp.gate_proj.weight", shape, DType::kBF16).action,
              MlxAction::kDrop)
        << type;
  }
}

// A stack takes its first-listed expert's place and reads expert e from that expert's tensor;
// experts that are not all there (mlx-lm's sanitize would fail on them) stay as they are.
TEST(PlanMlx, StacksCompleteExpertSetsOnly) {
  const MlxRules rules{
      .family = model::family_for_type("qwen3_moe"), .tied = false, .format = {4, 32}};
  const std::vector<HfTensor> inputs = {
      {"model.layers.0.mlp.experts.1.up_proj.weight", {2, 3}, DType::kF32},
      {"model.norm.weight", {64}, DType::kF32},
      {"model.layers.0.mlp.experts.0.up_proj.weight", {2, 3}, DType::kF32},
      {"model.layers.1.mlp.experts.0.up_proj.weight", {2, 3}, DType::kF32},
      {"model.layers.1.mlp.experts.2.up_proj.weight", {2, 3}, DType::kF32},
  };
  const MlxPlan plan = plan_mlx(rules, inputs);
  std::vector<std::string> names;
  for (const MlxTensor& t : plan.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"model.layers.0.mlp.switch_mlp.up_proj.weight",
                                             "model.norm.weight",
                                             "model.layers.1.mlp.experts.0.up_proj.weight",
                                             "model.layers.1.mlp.experts.2.up_proj.weight"}));
  EXPECT_EQ(plan.tensors[0].shape, (std::vector<std::int64_t>{2, 2, 3}));
  EXPECT_EQ(plan.sources[0].inputs, (std::vector<std::size_t>{2, 0}));
  // Element i of input k is 100 k + i: the stack's expert 0 is input 2, expert 1 input 0.
  std::vector<float> got(12);
  read_planned(plan, 0, 0, got, [](std::size_t k, std::int64_t begin, std::span<float> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 100.0f * k + begin + i;
  });
  EXPECT_EQ(got, (std::vector<float>{200, 201, 202, 203, 204, 205, 0, 1, 2, 3, 4, 5}));
  // Other families keep their per-expert tensors (granitemoehybrid stores them stacked).
  const MlxPlan dense =
      plan_mlx({.family = model::family_for_type("qwen3"), .format = {4, 32}}, inputs);
  EXPECT_EQ(dense.tensors.size(), inputs.size());
}

// Dense Granite 4.0-H's MLX copy has mlx-lm's GraniteMoeHybridMLP: the fused shared_mlp's gate
// rows become mlp.gate_proj, its up rows mlp.up_proj, output_linear mlp.down_proj. With experts,
// shared_mlp stays as it is (GraniteMoeHybridSharedMLP).
TEST(PlanMlx, DenseGraniteSplitsTheSharedMlp) {
  const std::vector<HfTensor> inputs = {
      {"model.layers.0.shared_mlp.input_linear.weight", {4, 3}, DType::kF32},
      {"model.layers.0.shared_mlp.output_linear.weight", {3, 2}, DType::kF32},
      {"model.norm.weight", {3}, DType::kF32},
  };
  const MlxPlan plan =
      plan_mlx({.family = model::family_for_type("granitemoehybrid"), .format = {4, 32}}, inputs);
  std::vector<std::string> names;
  for (const MlxTensor& t : plan.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
                       "model.layers.0.mlp.down_proj.weight", "model.norm.weight"}));
  EXPECT_EQ(plan.tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(plan.tensors[1].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(plan.tensors[2].shape, (std::vector<std::int64_t>{3, 2}));
  const auto read = [](std::size_t k, std::int64_t begin, std::span<float> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 100.0f * k + begin + i;
  };
  std::vector<float> gate(6), up(4);
  read_planned(plan, 0, 0, gate, read);
  read_planned(plan, 1, 2, up, read);  // from element 2 of the up rows
  EXPECT_EQ(gate, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(up, (std::vector<float>{8, 9, 10, 11}));
  const MlxPlan moe = plan_mlx({.family = model::family_for_type("granitemoehybrid"),
                                .has_experts = true,
                                .format = {4, 32}},
                               inputs);
  ASSERT_EQ(moe.tensors.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(moe.tensors[i].name, inputs[i].name);
}

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

  // Overrides follow the three keys, as the predicate returns them (no "mode").
  const ModuleFormat routers[] = {{"model.layers.0.mlp.gate", {.bits = 8, .group_size = 64}},
                                  {"model.layers.1.mlp.gate", {.bits = 8, .group_size = 64}}};
  auto with = add_quantization_config(R"({"a": 1})", {.bits = 4, .group_size = 32}, routers);
  ASSERT_TRUE(with.is_ok()) << with.status().to_string();
  const auto ordered = nlohmann::ordered_json::parse(*with);
  EXPECT_EQ(ordered["quantization"].dump(),
            R"({"group_size":32,"bits":4,"mode":"affine","model.layers.0.mlp.gate":)"
            R"({"group_size":64,"bits":8},"model.layers.1.mlp.gate":{"group_size":64,"bits":8}})");
  EXPECT_EQ(ordered["quantization_config"], ordered["quantization"]);

  EXPECT_FALSE(add_quantization_config("[1, 2]", {}).is_ok());
  const auto nested = add_quantization_config(R"({"text_config": {"quantization": {}}})", {});
  ASSERT_FALSE(nested.is_ok());
  EXPECT_NE(nested.status().message().find("already"), std::string::npos);
}

}  // namespace
}  // namespace recur::modelgen
