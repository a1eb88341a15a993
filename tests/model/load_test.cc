// Loading generated checkpoints of every family (bf16/f32, one or many shards) and every failure
// the loader must name: unknown model_type, missing tensor, wrong shape, unsupported dtype,
// broken index, malformed shard.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/checkpoint.h"
#include "model/config_json.h"
#include "model/family.h"
#include "model/model.h"
#include "test_util.h"

namespace recur::model {
namespace {

using testing::kAllFamilies;
using testing::make_checkpoint;
using testing::TempDir;
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  auto r = read_file(path);
  EXPECT_TRUE(r.is_ok());
  return r.is_ok() ? *r : std::string();
}

// The registry's model types in its order, as the loader's error lists them.
std::string supported_model_types() {
  std::string list;
  for (const FamilyInfo& f : families()) {
    for (std::string_view t : f.model_types) list += (list.empty() ? "" : ", ") + std::string(t);
  }
  return list;
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Rewrites one shard's header through `edit`, keeping the data block as it was.
void edit_header(const std::string& shard, const std::function<void(nlohmann::json&)>& edit) {
  std::string bytes = slurp(shard);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  edit(header);
  std::string h = header.dump();
  while ((h.size() % 8) != 0) h += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  spit(shard, out + h + bytes.substr(8 + n));
}

std::string first_shard(const std::string& dir) {
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors") shards.push_back(e.path().string());
  }
  std::sort(shards.begin(), shards.end());
  return shards.empty() ? std::string() : shards.front();
}

Result<bool> config_tied(const std::string& dir) {
  RECUR_ASSIGN_OR_RETURN(auto c, ConfigJson::parse(slurp(dir + "/config.json"), "config.json"));
  return c.get_bool("tie_word_embeddings", false);
}

TEST(Load, EveryFamilyLoadsAndRunsBf16AndF32) {
  TempDir tmp("load_all");
  for (auto family : kAllFamilies) {
    for (auto dtype : {modelgen::DType::kBF16, modelgen::DType::kF32}) {
      SCOPED_TRACE(std::string(modelgen::family_name(family)) + " " + modelgen::dtype_name(dtype));
      std::string dir = make_checkpoint(
          tmp, std::string(modelgen::family_name(family)) + modelgen::dtype_name(dtype), family,
          dtype);
      auto m = Model::load(dir);
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      // make-model's granitemoehybrid_moe is model_type granitemoehybrid with experts.
      EXPECT_EQ((*m)->family(), family == modelgen::Family::kGraniteMoe
                                    ? std::string("granitemoehybrid")
                                    : std::string(modelgen::family_name(family)));
      EXPECT_FALSE((*m)->eos_ids().empty());
      EXPECT_GT((*m)->tensors().size(), 5u);
      // The generator's tensor table and the family's visitor list one checkpoint: nothing is
      // written that the model does not read (the model refuses what it needs and lacks).
      auto ck = Checkpoint::open(dir);
      ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
      std::set<std::string> listed;
      for (const auto& t : (*m)->tensors()) listed.insert(t.name);
      const bool tied = *config_tied(dir);
      for (const auto& name : ck->names()) {
        // Qwen3-0.6B is tied yet its file holds lm_head.weight too, as the generator's does.
        if (tied && name == "lm_head.weight") continue;
        EXPECT_EQ(listed.count(name), 1u) << name << " is written but not read";
      }
      // The startup log's layer count is config.json's, whatever the layers' state entries.
      auto config = ConfigJson::parse(slurp(dir + "/config.json"), "config.json");
      ASSERT_TRUE(config.is_ok()) << config.status().to_string();
      EXPECT_EQ((*m)->n_layers(), *config->get_int("num_hidden_layers"));
      auto seq = (*m)->new_sequence();
      ThreadPool pool(1);
      std::vector<std::int32_t> tokens = {1, 2, 3, 4, 5};
      SeqChunk chunk{.seq = seq.get(), .tokens = tokens};
      auto logits = (*m)->forward(pool, {&chunk, 1});
      ASSERT_TRUE(logits.is_ok()) << logits.status().to_string();
      ASSERT_EQ(logits->n_rows, 1);
      EXPECT_EQ(seq->n_tokens(), 5);
      for (float v : logits->row(0)) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

TEST(Load, ShardedCheckpointMatchesSingleShard) {
  TempDir tmp("load_sharded");
  for (auto family : kAllFamilies) {
    SCOPED_TRACE(modelgen::family_name(family));
    std::string one = make_checkpoint(tmp, "one", family, modelgen::DType::kBF16, 7, 1);
    std::string three = make_checkpoint(tmp, "three", family, modelgen::DType::kBF16, 7, 3);
    auto a = Model::load(one);
    auto b = Model::load(three);
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << a.status().to_string() << b.status().to_string();
    ThreadPool pool(1);
    std::vector<std::int32_t> tokens = {3, 1, 4, 1, 5};
    auto sa = (*a)->new_sequence();
    auto sb = (*b)->new_sequence();
    SeqChunk ca{.seq = sa.get(), .tokens = tokens};
    SeqChunk cb{.seq = sb.get(), .tokens = tokens};
    auto la = (*a)->forward(pool, {&ca, 1});
    std::vector<float> first(la->row(0).begin(), la->row(0).end());
    auto lb = (*b)->forward(pool, {&cb, 1});
    ASSERT_TRUE(lb.is_ok());
    EXPECT_EQ(0, std::memcmp(first.data(), lb->row(0).data(), first.size() * sizeof(float)));
    fs::remove_all(one);
    fs::remove_all(three);
  }
}

TEST(Load, DifferentSeedsGiveDifferentFingerprints) {
  TempDir tmp("load_fp");
  auto a =
      Model::load(make_checkpoint(tmp, "a", modelgen::Family::kQwen3, modelgen::DType::kBF16, 1));
  auto b =
      Model::load(make_checkpoint(tmp, "b", modelgen::Family::kQwen3, modelgen::DType::kBF16, 2));
  auto c = Model::load(tmp.file("a"));
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_NE((*a)->fingerprint(), (*b)->fingerprint());
  EXPECT_EQ((*a)->fingerprint(), (*c)->fingerprint());
}

TEST(Load, UnknownModelTypeListsSupported) {
  TempDir tmp("load_unknown");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kQwen3, modelgen::DType::kBF16);
  auto cfg = nlohmann::json::parse(slurp(dir + "/config.json"));
  cfg["model_type"] = "gpt_bigcode";
  spit(dir + "/config.json", cfg.dump());
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("unsupported model_type 'gpt_bigcode'; supported: " +
                                      supported_model_types()),
            std::string::npos)
      << m.status().message();
}

TEST(Load, MissingTensorNamesItselfAndShape) {
  TempDir tmp("load_missing");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kQwen3, modelgen::DType::kBF16);
  std::string shard = first_shard(dir);
  fs::remove(dir + "/model.safetensors.index.json");
  edit_header(shard, [](nlohmann::json& h) { h.erase("model.layers.0.mlp.up_proj.weight"); });
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("missing tensor 'model.layers.0.mlp.up_proj.weight' "
                                      "(expected shape ["),
            std::string::npos)
      << m.status().message();
}

TEST(Load, WrongShapeAndDtypeAreNamed) {
  TempDir tmp("load_shape");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kMamba2, modelgen::DType::kF32);
  std::string shard = first_shard(dir);
  fs::remove(dir + "/model.safetensors.index.json");
  edit_header(shard, [](nlohmann::json& h) {
    auto& t = h["backbone.layers.0.mixer.D"];
    auto n = t["shape"][0].get<std::int64_t>();
    t["shape"] = {1, n};
  });
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("tensor 'backbone.layers.0.mixer.D' has shape [1, "),
            std::string::npos)
      << m.status().message();
  edit_header(shard, [](nlohmann::json& h) {
    auto& t = h["backbone.layers.0.mixer.D"];
    t["shape"] = {t["shape"][1]};
    t["dtype"] = "I32";
  });
  m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("'backbone.layers.0.mixer.D' has dtype I32"),
            std::string::npos)
      << m.status().message();
}

// gpt-oss's MXFP4 experts: a scale byte of 255 (NaN in e8m0) is named with its tensor and expert;
// a blocks tensor of another dtype or shape is named; a transformers quantizer other than MXFP4
// is refused by name.
TEST(Load, GptOssMxfp4ErrorsAreNamed) {
  TempDir tmp("load_mxfp4");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kGptOss, modelgen::DType::kBF16);
  ASSERT_TRUE(Model::load(dir).is_ok());
  std::string shard = first_shard(dir);
  const std::string name = "model.layers.1.mlp.experts.down_proj_scales";
  {
    std::string bytes = slurp(shard);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    const auto header = nlohmann::json::parse(bytes.substr(8, n));
    // Expert 3's first scale: [E, d, f/32] with d 64, f/32 2.
    const std::size_t at = 8 + n + header[name]["data_offsets"][0].get<std::size_t>() + 3 * 64 * 2;
    const std::string good = bytes;
    bytes[at] = static_cast<char>(255);
    spit(shard, bytes);
    auto m = Model::load(dir);
    ASSERT_FALSE(m.is_ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find("'" + name + "' of expert 3 holds 255"), std::string::npos)
        << m.status().message();
    bytes[at] = static_cast<char>(254);
    spit(shard, bytes);
    m = Model::load(dir);
    ASSERT_FALSE(m.is_ok());
    EXPECT_NE(m.status().message().find("of expert 3 holds a scale of 253 or 254"),
              std::string::npos)
        << m.status().message();
    spit(shard, good);
  }
  edit_header(shard, [&](nlohmann::json& h) { h[name]["dtype"] = "I8"; });
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("tensor '" + name + "' is I8 [8, 64, 2], expected U8"),
            std::string::npos)
      << m.status().message();
  edit_header(shard, [&](nlohmann::json& h) { h[name]["dtype"] = "U8"; });
  std::string config = slurp(dir + "/config.json");
  config.replace(config.find("\"mxfp4\""), 7, "\"fp8\"");
  spit(dir + "/config.json", config);
  m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("quant_method \"fp8\" is not supported"), std::string::npos)
      << m.status().message();
}

TEST(Load, TruncatedShardIsDataLoss) {
  TempDir tmp("load_trunc");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kQwen3_5, modelgen::DType::kBF16);
  std::string shard = first_shard(dir);
  fs::resize_file(shard, fs::file_size(shard) - 16);
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find(shard), std::string::npos) << m.status().message();
}

TEST(Load, IndexPointingAtWrongShardIsAnError) {
  TempDir tmp("load_index");
  std::string dir =
      make_checkpoint(tmp, "m", modelgen::Family::kQwen3_5, modelgen::DType::kBF16, 1, 2);
  std::string index_path = dir + "/model.safetensors.index.json";
  ASSERT_TRUE(fs::exists(index_path));
  auto index = nlohmann::json::parse(slurp(index_path));
  auto& map = index["weight_map"];
  std::string a = map.begin().value();
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it.value() != a) {
      it.value() = a;
      break;
    }
  }
  spit(index_path, index.dump());
  auto m = Model::load(dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("the index places tensor"), std::string::npos)
      << m.status().message();
}

// Appends an F32 tensor of `shape` (zeros) to a shard: a new header entry plus bytes at the end.
void add_tensor(const std::string& shard, const std::string& name,
                const std::vector<std::int64_t>& shape) {
  std::string bytes = slurp(shard);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  const std::size_t data_len = bytes.size() - 8 - n;
  std::size_t count = 1;
  for (auto d : shape) count *= static_cast<std::size_t>(d);
  edit_header(shard, [&](nlohmann::json& h) {
    h[name] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data_len, data_len + 4 * count}}};
  });
  spit(shard, slurp(shard) + std::string(4 * count, '\0'));
}

TEST(Load, UnusedTensorsAreSkippedAndEveryUsedOneIsListed) {
  TempDir tmp("load_skip");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kQwen3_5, modelgen::DType::kBF16);
  ThreadPool pool(1);
  std::vector<std::int32_t> tokens = {5, 6, 7};
  auto logits_of = [&](const std::string& d) {
    auto m = Model::load(d);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    auto seq = (*m)->new_sequence();
    SeqChunk c{.seq = seq.get(), .tokens = tokens};
    auto r = (*m)->forward(pool, {&c, 1});
    return std::vector<float>(r->row(0).begin(), r->row(0).end());
  };
  const auto before = logits_of(dir);
  fs::remove(dir + "/model.safetensors.index.json");
  std::string shard = first_shard(dir);
  add_tensor(shard, "mtp.fc.weight", {4, 8});
  add_tensor(shard, "model.visual.blocks.0.attn.qkv.weight", {6, 2});
  EXPECT_EQ(before, logits_of(dir));
  auto m = Model::load(dir);
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(m.is_ok() && ck.is_ok());
  std::set<std::string> listed;
  for (const auto& t : (*m)->tensors()) {
    listed.insert(t.name);
    const TensorInfo* info = ck->find(t.name);
    ASSERT_TRUE(info != nullptr || !t.required) << t.name;
    if (info != nullptr) {
      EXPECT_EQ(info->shape, t.shape) << t.name;
    }
  }
  for (const auto& name : ck->names()) {
    const bool skipped = name.starts_with("mtp.") || name.starts_with("model.visual.");
    EXPECT_NE(listed.count(name) == 1, skipped) << name;
  }
}

// Qwen3_5ForCausalLM (text-only) checkpoints keep the fields at the top level, use model_type
// qwen3_5_text and the tensor prefix model. instead of model.language_model.
TEST(Load, TextOnlyQwen35LayoutGivesTheSameLogits) {
  TempDir tmp("load_textonly");
  std::string dir = make_checkpoint(tmp, "m", modelgen::Family::kQwen3_5, modelgen::DType::kBF16);
  ThreadPool pool(1);
  std::vector<std::int32_t> tokens = {9, 8, 7, 6};
  auto logits_of = [&](const std::string& d) {
    auto m = Model::load(d);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    if (!m.is_ok()) return std::vector<float>();
    auto seq = (*m)->new_sequence();
    SeqChunk c{.seq = seq.get(), .tokens = tokens};
    auto r = (*m)->forward(pool, {&c, 1});
    return std::vector<float>(r->row(0).begin(), r->row(0).end());
  };
  const auto want = logits_of(dir);
  auto cfg = nlohmann::json::parse(slurp(dir + "/config.json"));
  ASSERT_TRUE(cfg.contains("text_config"));
  nlohmann::json flat = cfg["text_config"];
  flat["model_type"] = "qwen3_5_text";
  flat["tie_word_embeddings"] = cfg.value("tie_word_embeddings", false);
  spit(dir + "/config.json", flat.dump());
  fs::remove(dir + "/model.safetensors.index.json");
  const std::string from = "model.language_model.";
  edit_header(first_shard(dir), [&](nlohmann::json& h) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [name, v] : h.items()) {
      out[name.starts_with(from) ? "model." + name.substr(from.size()) : name] = v;
    }
    h = out;
  });
  EXPECT_EQ(want, logits_of(dir));
}

TEST(Load, NotACheckpoint) {
  TempDir tmp("load_none");
  auto m = Model::load(tmp.path());
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("config.json"), std::string::npos);
}

}  // namespace
}  // namespace recur::model
