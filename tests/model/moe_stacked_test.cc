// MLX's stacked experts (mlx-lm qwen3_moe.py sanitize: `mlp.switch_mlp.{gate,up,down}_proj.*`
// [experts, ...]) load to the same model as the per-expert tensors: the test restacks a generated
// checkpoint's experts into one safetensors file (or cuts the generator's stacked MLX output back
// into per-expert tensors) and compares the logits byte for byte, for an MLX-quantized checkpoint
// (codes, scales and biases stacked) and a plain bf16 one.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "convert/quantize.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// "model.layers.0.mlp.experts.5.up_proj.scales" -> ("model.layers.0.mlp.switch_mlp.up_proj.scales",
// 5); other names -> ("", -1). `fused`: transformers 5's layout instead, gate and up of expert e at
// 2e and 2e + 1 of "<p>.mlp.experts.gate_up_proj", down at e of "<p>.mlp.experts.down_proj".
// LFM2-MoE (mlx-lm lfm2_moe.py sanitize): "<p>.feed_forward.experts.<e>.w1.*" stacks into
// "<p>.feed_forward.switch_mlp.gate_proj.*" (w3 up_proj, w2 down_proj), and the dense layers'
// feed_forward.w1 / w3 / w2 are renamed gate_proj / up_proj / down_proj: (new name, -1).
std::pair<std::string, int> lfm2_mlx_name(const std::string& name) {
  static const std::pair<std::string, std::string> kProj[] = {
      {"w1.", "gate_proj."}, {"w3.", "up_proj."}, {"w2.", "down_proj."}};
  const std::string key = ".feed_forward.experts.", dense = ".feed_forward.";
  const std::size_t at = name.find(key);
  if (at != std::string::npos) {
    const std::size_t num = at + key.size(), dot = name.find('.', num);
    const std::string tail = name.substr(dot + 1);
    for (const auto& [hf, mlx] : kProj) {
      if (tail.starts_with(hf)) {
        return {name.substr(0, at) + ".feed_forward.switch_mlp." + mlx + tail.substr(hf.size()),
                std::stoi(name.substr(num, dot - num))};
      }
    }
  }
  const std::size_t d = name.find(dense);
  if (d != std::string::npos) {
    const std::string tail = name.substr(d + dense.size());
    for (const auto& [hf, mlx] : kProj) {
      if (tail.starts_with(hf)) {
        return {name.substr(0, d) + dense + mlx + tail.substr(hf.size()), -1};
      }
    }
  }
  return {"", -1};
}

// Nemotron-H (mlx-lm nemotron_h.py sanitize): "<p>.mixer.experts.<e>.up_proj.*" stacks into
// "<p>.mixer.switch_mlp.fc1.*" (down_proj fc2); `fused`: transformers 5's
// "<p>.mixer.experts.up_proj" / "down_proj" [E, ...] instead.
std::pair<std::string, int> nemotron_stacked_name(const std::string& name, bool fused) {
  const std::string key = ".mixer.experts.";
  const std::size_t at = name.find(key);
  if (at == std::string::npos) return {"", -1};
  const std::size_t num = at + key.size(), dot = name.find('.', num);
  const int e = std::stoi(name.substr(num, dot - num));
  const bool up = name.substr(dot + 1).starts_with("up_proj.");
  if (fused) return {name.substr(0, at) + key + (up ? "up_proj" : "down_proj"), e};
  const std::string tail = name.substr(dot + 1 + (up ? 7 : 9));  // ".weight", ".scales", ...
  return {name.substr(0, at) + ".mixer.switch_mlp." + (up ? "fc1" : "fc2") + tail, e};
}

enum class Layout : std::uint8_t { kDefault, kLfm2, kNemotron };

std::pair<std::string, int> stacked_name(const std::string& name, bool fused, bool lfm2,
                                         Layout layout = Layout::kDefault) {
  if (layout == Layout::kNemotron) return nemotron_stacked_name(name, fused);
  if (lfm2) return lfm2_mlx_name(name);
  const std::string key = ".mlp.experts.";
  const std::size_t at = name.find(key);
  if (at == std::string::npos) return {"", -1};
  const std::size_t num = at + key.size(), dot = name.find('.', num);
  const int e = std::stoi(name.substr(num, dot - num));
  if (!fused) return {name.substr(0, at) + ".mlp.switch_mlp" + name.substr(dot), e};
  const std::string fused_name = name.substr(0, at) + key;
  if (name.ends_with(".down_proj.weight")) return {fused_name + "down_proj", e};
  return {fused_name + "gate_up_proj", 2 * e + (name.ends_with(".up_proj.weight") ? 1 : 0)};
}

// One tensor of a rewritten checkpoint: its pieces' bytes one after the other.
struct Piece {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::pair<const std::uint8_t*, std::size_t>> bytes;
};

// Copies the checkpoint directory at `src` to `dst` with its weights replaced by `tensors` (one
// safetensors file).
void write_checkpoint_as(const std::string& src, const std::string& dst, const Checkpoint& ck,
                         const std::vector<Piece>& tensors) {
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) {
    if (e.path().extension() != ".safetensors" &&
        e.path().filename() != "model.safetensors.index.json") {
      fs::copy_file(e.path(), fs::path(dst) / e.path().filename());
    }
  }
  nlohmann::json header;
  if (ck.mlx_format()) header["__metadata__"] = {{"format", "mlx"}};
  std::string data;
  for (const Piece& t : tensors) {
    const std::size_t begin = data.size();
    for (const auto& [p, n] : t.bytes) data.append(reinterpret_cast<const char*>(p), n);
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data block aligned
  std::ofstream f(dst + "/model.safetensors", std::ios::binary);
  const std::uint64_t n = text.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << text << data;
}

// Copies the checkpoint at `src` to `dst` with every expert tensor folded into its stacked one.
void restack(const std::string& src, const std::string& dst, bool fused = false, bool lfm2 = false,
             Layout layout = Layout::kDefault) {
  auto ck = Checkpoint::open(src);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  std::map<std::string, std::vector<const TensorInfo*>> stacks;  // by stacked name, expert order
  std::vector<std::pair<std::string, std::vector<const TensorInfo*>>> out;
  for (const std::string& name : ck->names()) {
    const auto [stacked, e] = stacked_name(name, fused, lfm2, layout);
    if (e < 0) {
      out.push_back({stacked.empty() ? name : stacked, {ck->find(name)}});
      continue;
    }
    auto& v = stacks[stacked];
    if (v.size() <= static_cast<std::size_t>(e)) v.resize(static_cast<std::size_t>(e) + 1);
    v[static_cast<std::size_t>(e)] = ck->find(name);
  }
  for (auto& [name, parts] : stacks) out.push_back({name, parts});
  std::vector<Piece> tensors;
  for (const auto& [name, parts] : out) {
    std::vector<std::int64_t> shape = parts.front()->shape;
    if (name.ends_with(".gate_up_proj")) {
      shape = {static_cast<std::int64_t>(parts.size()) / 2, 2 * shape[0], shape[1]};
    } else if (parts.size() > 1 || name.ends_with(".down_proj")) {
      shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
    }
    Piece t{.name = name, .dtype = parts.front()->dtype_text, .shape = shape};
    for (const TensorInfo* p : parts) t.bytes.push_back({p->data, p->n_bytes});
    tensors.push_back(std::move(t));
  }
  write_checkpoint_as(src, dst, *ck, tensors);
}

// The other way: copies the MLX checkpoint at `src` (stacked `<p>switch_mlp.<proj>.*`
// [experts, ...]) to `dst` with every stack cut into per-expert tensors `<p>experts.<e>.<proj>.*`
// (LFM2: Hugging Face's w1 / w3 / w2 names, the dense layers' too), each expert's slab of codes,
// scales and biases as it lies.
void unstack(const std::string& src, const std::string& dst, bool lfm2 = false,
             bool nemotron = false) {
  auto ck = Checkpoint::open(src);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  static const std::pair<std::string, std::string> kLfm2[] = {
      {"gate_proj.", "w1."}, {"up_proj.", "w3."}, {"down_proj.", "w2."}};
  static const std::pair<std::string, std::string> kNemotron[] = {{"fc1.", "up_proj."},
                                                                  {"fc2.", "down_proj."}};
  const auto hf_proj = [&](std::string tail) {
    if (nemotron) {
      for (const auto& [mlx, hf] : kNemotron) {
        if (tail.starts_with(mlx)) return hf + tail.substr(mlx.size());
      }
    }
    if (!lfm2) return tail;
    for (const auto& [mlx, hf] : kLfm2) {
      if (tail.starts_with(mlx)) return hf + tail.substr(mlx.size());
    }
    return tail;
  };
  std::vector<Piece> tensors;
  const std::string key = "switch_mlp.", dense = ".feed_forward.";
  for (const std::string& name : ck->names()) {
    const TensorInfo* t = ck->find(name);
    const std::size_t at = name.find(key);
    if (at == std::string::npos) {
      std::string out = name;
      const std::size_t d = name.find(dense);
      if (d != std::string::npos) {
        out = name.substr(0, d + dense.size()) + hf_proj(name.substr(d + dense.size()));
      }
      tensors.push_back({.name = out, .dtype = t->dtype_text, .shape = t->shape});
      tensors.back().bytes.push_back({t->data, t->n_bytes});
      continue;
    }
    const std::int64_t n = t->shape[0];
    const std::size_t slab = t->n_bytes / static_cast<std::size_t>(n);
    for (std::int64_t e = 0; e < n; ++e) {
      Piece p{.name = name.substr(0, at) + "experts." + std::to_string(e) + "." +
                      hf_proj(name.substr(at + key.size())),
              .dtype = t->dtype_text,
              .shape = {t->shape.begin() + 1, t->shape.end()}};
      p.bytes.push_back({t->data + e * slab, slab});
      tensors.push_back(std::move(p));
    }
  }
  write_checkpoint_as(src, dst, *ck, tensors);
}

std::vector<float> logits(const std::string& dir, int quantize_bits, int group_size = 32) {
  auto m = Model::load(dir, {.max_batch_tokens = 40,
                             .max_logit_rows = 40,
                             .quantize_bits = quantize_bits,
                             .quantize_group_size = group_size});
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  if (!m.is_ok()) return {};
  std::mt19937 rng(17);
  std::vector<std::int32_t> tokens(40);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % (*m)->vocab_size());
  ThreadPool pool(2);
  auto seq = (*m)->new_sequence();
  SeqChunk c{.seq = seq.get(), .tokens = tokens, .logits = LogitsWanted::kAll};
  auto r = (*m)->forward(pool, {&c, 1});
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return {};
  return {r->data, r->data + r->n_rows * r->vocab_size};
}

TEST(MoeStackedExperts, SwitchMlpLoadsAsThePerExpertTensors) {
  // Qwen3-MoE, and Qwen3-Next / Qwen3.5-MoE (mlx-lm's qwen3_next.py and qwen3_5_moe.py stack
  // theirs the same way; the shared expert stays as it is). Unquantized: the generated per-expert
  // checkpoint against its restacked copy; MLX-quantized: the generator's stacked switch_mlp (as
  // mlx-lm writes it) against its copy cut back into per-expert tensors.
  for (auto [family, layer0] :
       {std::pair{modelgen::Family::kQwen3Moe, "model.layers.0."},
        {modelgen::Family::kQwen3Next, "model.layers.0."},
        {modelgen::Family::kQwen3_5Moe, "model.language_model.layers.0."}}) {
    for (int bits : {0, 4, 8}) {
      SCOPED_TRACE(std::string(modelgen::family_name(family)) + " " + std::to_string(bits));
      TempDir tmp(std::string("moe_stacked") + modelgen::family_name(family) +
                  std::to_string(bits));
      modelgen::GenSpec spec{.family = family, .seed = 4, .bits = bits, .group_size = 32};
      const std::string generated = tmp.file("generated"), copy = tmp.file("copy");
      ASSERT_TRUE(modelgen::write_checkpoint(spec, generated).is_ok());
      if (bits == 0) {
        restack(generated, copy);
      } else {
        unstack(generated, copy);
      }
      const std::string& per_expert = bits == 0 ? generated : copy;
      const std::string& stacked = bits == 0 ? copy : generated;
      // mlx-vlm's names for Qwen3.5-MoE's MLX checkpoints.
      const std::string p = bits != 0 && family == modelgen::Family::kQwen3_5Moe
                                ? "language_model.model.layers.0."
                                : std::string(layer0);
      auto ck = Checkpoint::open(stacked);
      ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
      ASSERT_NE(ck->find(p + "mlp.switch_mlp.down_proj.weight"), nullptr);
      ASSERT_EQ(ck->find(p + "mlp.experts.0.down_proj.weight"), nullptr);
      auto pe = Checkpoint::open(per_expert);
      ASSERT_TRUE(pe.is_ok()) << pe.status().to_string();
      ASSERT_NE(pe->find(p + "mlp.experts.7.down_proj.weight"), nullptr);
      ASSERT_EQ(pe->find(p + "mlp.switch_mlp.down_proj.weight"), nullptr);
      const std::vector<float> want = logits(per_expert, 0);
      const std::vector<float> got = logits(stacked, 0);
      ASSERT_FALSE(want.empty());
      ASSERT_EQ(want.size(), got.size());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
      if (bits == 0) {  // a plain stacked tensor quantized on load, expert by expert
        const std::vector<float> a = logits(per_expert, 4), b = logits(stacked, 4);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
      }
    }
  }
}

// LFM2-MoE in mlx-lm's layout (stacked feed_forward.switch_mlp, the dense layers' w1 / w3 / w2
// renamed gate_proj / up_proj / down_proj) loads to the released per-expert layout's logits, byte
// for byte: plain bf16 (restacked) and the plain one quantized on load too, and MLX 4-bit as the
// generator writes it (against its copy cut back into per-expert w1 / w3 / w2).
TEST(MoeStackedExperts, Lfm2MoeMlxLayoutLoadsAsThePerExpertTensors) {
  for (int bits : {0, 4}) {
    SCOPED_TRACE(bits);
    TempDir tmp("lfm2_moe_stacked" + std::to_string(bits));
    modelgen::GenSpec spec{
        .family = modelgen::Family::kLfm2Moe, .seed = 4, .bits = bits, .group_size = 32};
    const std::string generated = tmp.file("generated"), copy = tmp.file("copy");
    ASSERT_TRUE(modelgen::write_checkpoint(spec, generated).is_ok());
    if (bits == 0) {
      restack(generated, copy, false, /*lfm2=*/true);
    } else {
      unstack(generated, copy, /*lfm2=*/true);
    }
    const std::string& per_expert = bits == 0 ? generated : copy;
    const std::string& mlx = bits == 0 ? copy : generated;
    auto ck = Checkpoint::open(mlx);
    ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
    ASSERT_NE(ck->find("model.layers.1.feed_forward.switch_mlp.gate_proj.weight"), nullptr);
    ASSERT_NE(ck->find("model.layers.0.feed_forward.gate_proj.weight"), nullptr);
    ASSERT_EQ(ck->find("model.layers.1.feed_forward.experts.0.w1.weight"), nullptr);
    ASSERT_EQ(ck->find("model.layers.0.feed_forward.w1.weight"), nullptr);
    auto pe = Checkpoint::open(per_expert);
    ASSERT_TRUE(pe.is_ok()) << pe.status().to_string();
    ASSERT_NE(pe->find("model.layers.1.feed_forward.experts.7.w1.weight"), nullptr);
    ASSERT_NE(pe->find("model.layers.0.feed_forward.w1.weight"), nullptr);
    for (int q : {0, 4}) {
      if (bits != 0 && q != 0) continue;
      const std::vector<float> want = logits(per_expert, q), got = logits(mlx, q);
      ASSERT_FALSE(want.empty());
      ASSERT_EQ(want.size(), got.size());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << q;
    }
  }
}

// Qwen3.5-MoE's released files hold transformers 5's fused experts, gate_up_proj
// [experts, 2 * moe_intermediate_size, hidden] (gate rows first) and down_proj
// [experts, hidden, moe_intermediate_size], without a .weight suffix: they load as the per-expert
// tensors the generator writes, as they are and quantized on load.
TEST(MoeStackedExperts, FusedGateUpLoadsAsThePerExpertTensors) {
  TempDir tmp("moe_fused");
  modelgen::GenSpec spec{.family = modelgen::Family::kQwen3_5Moe, .seed = 4};
  const std::string per_expert = tmp.file("per_expert");
  ASSERT_TRUE(modelgen::write_checkpoint(spec, per_expert).is_ok());
  const std::string fused = tmp.file("fused");
  restack(per_expert, fused, /*fused=*/true);
  auto ck = Checkpoint::open(fused);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  const TensorInfo* gate_up = ck->find("model.language_model.layers.0.mlp.experts.gate_up_proj");
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->shape, (std::vector<std::int64_t>{8, 64, 64}));
  ASSERT_NE(ck->find("model.language_model.layers.0.mlp.experts.down_proj"), nullptr);
  ASSERT_EQ(ck->find("model.language_model.layers.0.mlp.experts.0.gate_proj.weight"), nullptr);
  for (int bits : {0, 4}) {
    SCOPED_TRACE(bits);
    const std::vector<float> want = logits(per_expert, bits), got = logits(fused, bits);
    ASSERT_FALSE(want.empty());
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
  }
}

// The tiny MoE presets' 8 experts of ff 32 x d 64 as MLX's stacked switch_mlp codes (`bits`;
// down_proj's 32 inputs only when they make a group).
void expect_switch_mlp_codes(const Checkpoint& ck, const std::string& prefix, int bits = 4,
                             int group_size = 32) {
  for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
    const TensorInfo* codes = ck.find(prefix + "switch_mlp." + proj + ".weight");
    ASSERT_NE(codes, nullptr) << proj;
    const bool down = std::string(proj) == "down_proj";
    const std::int64_t rows = down ? 64 : 32, cols = down ? 32 : 64;
    if (cols % group_size != 0) {
      EXPECT_EQ(codes->shape, (std::vector<std::int64_t>{8, rows, cols})) << proj;
      continue;
    }
    EXPECT_EQ(codes->shape, (std::vector<std::int64_t>{8, rows, cols * bits / 32})) << proj;
    EXPECT_EQ(codes->dtype_text, "U32") << proj;
  }
}

// mlx-lm keeps the MoE routers at 8 bits in groups of 64 (the families' quant_predicate).
void expect_eight_bit_router(const Checkpoint& ck, const std::string& module) {
  const TensorInfo* codes = ck.find(module + ".weight");
  const TensorInfo* scales = ck.find(module + ".scales");
  ASSERT_NE(codes, nullptr) << module;
  ASSERT_NE(scales, nullptr) << module;
  EXPECT_EQ(codes->shape, (std::vector<std::int64_t>{8, 64 * 8 / 32})) << module;
  EXPECT_EQ(scales->shape, (std::vector<std::int64_t>{8, 1})) << module;
}

// recur quantize on fused experts writes what mlx-lm's qwen3_5_moe.py makes of them: stacked
// switch_mlp.{gate,up,down}_proj, quantized, the routers at 8 bits; they load to the logits of the
// per-expert checkpoint converted alike (f32 sources: MLX's norms hold 1 + w, which bf16 would
// round).
TEST(MoeStackedExperts, QuantizeSplitsFusedExpertsIntoSwitchMlp) {
  TempDir tmp("moe_fused_quantize");
  modelgen::GenSpec spec{
      .family = modelgen::Family::kQwen3_5Moe, .dtype = modelgen::DType::kF32, .seed = 4};
  const std::string per_expert = tmp.file("per_expert");
  ASSERT_TRUE(modelgen::write_checkpoint(spec, per_expert).is_ok());
  const std::string fused = tmp.file("fused");
  restack(per_expert, fused, /*fused=*/true);
  const std::string mlx = tmp.file("mlx");
  const Status q = convert::quantize_checkpoint(fused, mlx, 4, 32);
  ASSERT_TRUE(q.is_ok()) << q.to_string();
  auto ck = Checkpoint::open(mlx);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  const std::string p = "language_model.model.layers.0.mlp.";
  ASSERT_EQ(ck->find(p + "experts.gate_up_proj"), nullptr);
  expect_switch_mlp_codes(*ck, p);
  expect_eight_bit_router(*ck, p + "gate");
  const std::string from_per_expert = tmp.file("mlx_per_expert");
  ASSERT_TRUE(convert::quantize_checkpoint(per_expert, from_per_expert, 4, 32).is_ok());
  const std::vector<float> want = logits(from_per_expert, 0), got = logits(mlx, 0);
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(want.size(), got.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
}

// Granite 4.0-H's MoE variant: recur quantize splits block_sparse_moe.input_linear [E, 2 * ff, d]
// and output_linear into block_sparse_moe.switch_mlp.{gate,up,down}_proj as mlx-lm's
// granitemoehybrid.py sanitize does; the result loads to the Hugging Face checkpoint quantized on
// load, logits byte for byte. At 8 bits in groups of 64, the format mlx-lm gives the router, so
// that quantizing on load (one format for every matrix) makes the same weights.
TEST(MoeStackedExperts, QuantizeSplitsGraniteInputLinearIntoSwitchMlp) {
  TempDir tmp("granite_moe_quantize");
  modelgen::GenSpec spec{
      .family = modelgen::Family::kGraniteMoe, .dtype = modelgen::DType::kF32, .seed = 4};
  const std::string hf = tmp.file("hf");
  ASSERT_TRUE(modelgen::write_checkpoint(spec, hf).is_ok());
  const std::string mlx = tmp.file("mlx");
  const Status q = convert::quantize_checkpoint(hf, mlx, 8, 64);
  ASSERT_TRUE(q.is_ok()) << q.to_string();
  auto ck = Checkpoint::open(mlx);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  const std::string p = "model.layers.0.block_sparse_moe.";
  ASSERT_EQ(ck->find(p + "input_linear.weight"), nullptr);
  expect_switch_mlp_codes(*ck, p, 8, 64);
  expect_eight_bit_router(*ck, p + "router.layer");
  const std::vector<float> want = logits(hf, 8, 64), got = logits(mlx, 0);
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(want.size(), got.size());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace recur::model

namespace recur::model {
namespace {

// Nemotron-H's MoE blocks in mlx-lm's layout (nemotron_h.py sanitize: experts stacked into
// mixer.switch_mlp.fc1 / fc2, the router MoEGate left unquantized) and in transformers 5's stacked
// experts.up_proj / down_proj load to the released per-expert layout's logits, byte for byte: bf16
// restacked (also quantized on load), and the generator's MLX 4-bit checkpoint against its copy cut
// back into per-expert up_proj / down_proj.
TEST(MoeStackedExperts, NemotronHMlxAndStackedLayoutsLoadAsThePerExpertTensors) {
  const std::string p = "backbone.layers.1.mixer.";
  for (int bits : {0, 4}) {
    SCOPED_TRACE(bits);
    TempDir tmp("nemotron_stacked" + std::to_string(bits));
    modelgen::GenSpec spec{.family = modelgen::Family::kNemotronH,
                           .preset = "tiny-moe",
                           .seed = 4,
                           .bits = bits,
                           .group_size = 32};
    const std::string generated = tmp.file("generated"), copy = tmp.file("copy");
    ASSERT_TRUE(modelgen::write_checkpoint(spec, generated).is_ok());
    if (bits == 0) {
      restack(generated, copy, false, false, Layout::kNemotron);
    } else {
      unstack(generated, copy, false, /*nemotron=*/true);
    }
    const std::string& per_expert = bits == 0 ? generated : copy;
    const std::string& mlx = bits == 0 ? copy : generated;
    auto ck = Checkpoint::open(mlx);
    ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
    const TensorInfo* fc1 = ck->find(p + "switch_mlp.fc1.weight");
    ASSERT_NE(fc1, nullptr);
    ASSERT_NE(ck->find(p + "switch_mlp.fc2.weight"), nullptr);
    ASSERT_EQ(ck->find(p + "experts.0.up_proj.weight"), nullptr);
    if (bits != 0) {
      EXPECT_EQ(fc1->dtype_text, "U32");
      EXPECT_EQ(fc1->shape, (std::vector<std::int64_t>{8, 32, 64 * 4 / 32}));
      // mlx-lm quantizes Linears only: the router (a plain module) stays as it is, and so does
      // the f32 correction bias (cast_predicate).
      EXPECT_EQ(ck->find(p + "gate.scales"), nullptr);
      EXPECT_EQ(ck->find(p + "gate.weight")->dtype_text, "BF16");
      EXPECT_EQ(ck->find(p + "gate.e_score_correction_bias")->dtype_text, "F32");
      EXPECT_NE(ck->find(p + "shared_experts.up_proj.scales"), nullptr);
    }
    auto pe = Checkpoint::open(per_expert);
    ASSERT_TRUE(pe.is_ok()) << pe.status().to_string();
    ASSERT_NE(pe->find(p + "experts.7.down_proj.weight"), nullptr);
    for (int q : {0, 4}) {
      if (bits != 0 && q != 0) continue;
      const std::vector<float> want = logits(per_expert, q), got = logits(mlx, q);
      ASSERT_FALSE(want.empty());
      ASSERT_EQ(want.size(), got.size());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << q;
    }
    if (bits == 0) {  // transformers 5's stacks
      const std::string fused = tmp.file("fused");
      restack(generated, fused, /*fused=*/true, false, Layout::kNemotron);
      auto f = Checkpoint::open(fused);
      ASSERT_TRUE(f.is_ok()) << f.status().to_string();
      const TensorInfo* up = f->find(p + "experts.up_proj");
      ASSERT_NE(up, nullptr);
      EXPECT_EQ(up->shape, (std::vector<std::int64_t>{8, 32, 64}));
      ASSERT_NE(f->find(p + "experts.down_proj"), nullptr);
      for (int q : {0, 4}) {
        const std::vector<float> want = logits(per_expert, q), got = logits(fused, q);
        ASSERT_EQ(want.size(), got.size());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << q;
      }
      // recur quantize of either layout writes mlx-lm's.
      const std::string from_per_expert = tmp.file("q_per_expert"),
                        from_fused = tmp.file("q_fused");
      ASSERT_TRUE(convert::quantize_checkpoint(per_expert, from_per_expert, 4, 32).is_ok());
      const Status qf = convert::quantize_checkpoint(fused, from_fused, 4, 32);
      ASSERT_TRUE(qf.is_ok()) << qf.to_string();
      for (const std::string& dir : {from_per_expert, from_fused}) {
        auto q = Checkpoint::open(dir);
        ASSERT_TRUE(q.is_ok()) << q.status().to_string();
        EXPECT_NE(q->find(p + "switch_mlp.fc1.scales"), nullptr) << dir;
        EXPECT_NE(q->find(p + "switch_mlp.fc2.scales"), nullptr) << dir;
        EXPECT_EQ(q->find(p + "gate.scales"), nullptr) << dir;
      }
      const std::vector<float> a = logits(from_per_expert, 0), b = logits(from_fused, 0);
      ASSERT_FALSE(a.empty());
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    }
  }
}

}  // namespace
}  // namespace recur::model
