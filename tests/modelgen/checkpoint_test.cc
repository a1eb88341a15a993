// Generated tiny checkpoints, read back with the test's own reader: tensor names, shapes, dtypes
// and offsets against the tables of the reference spec, config files, sharding, determinism and
// the refusal of bad requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "expected_tables.h"
#include "modelgen/generator.h"
#include "st_reader.h"

namespace recur::modelgen {
namespace {

namespace fs = std::filesystem;
using testing::Expected;
using testing::read_safetensors;
using testing::slurp;
using testing::StFile;
using testing::Table;
using Json = nlohmann::json;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / fmt::format("recur-modelgen-{}-{}", ::getpid(), counter++);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Json parse_json_file(const fs::path& p) {
  std::string text = slurp(p);
  // Python writes a bare Infinity (mamba2's time_step_limit); nlohmann reads neither it nor an
  // overflowing literal, so it becomes 1e300 for comparison.
  for (std::size_t at; (at = text.find("Infinity")) != std::string::npos;)
    text.replace(at, 8, "1e300");
  Json j = Json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << p;
  return j;
}

// The structural rules of one safetensors file (format, not content).
void check_layout(const StFile& f) {
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_EQ(f.header_len % 8, 0u);
  const std::size_t close = f.header.find_last_of('}');
  EXPECT_EQ(f.header.find_first_not_of(' ', close + 1), std::string::npos) << "padding not spaces";
  EXPECT_EQ(f.metadata, Json({{"format", "pt"}}));
  std::vector<testing::StTensor> by_offset;
  for (const auto& [name, t] : f.tensors) {
    std::int64_t n = 1;
    for (auto d : t.shape) n *= d;
    const int size = t.dtype == "F32" ? 4 : t.dtype == "U8" ? 1 : 2;
    EXPECT_EQ(t.end - t.begin, n * size) << name;
    EXPECT_EQ(t.begin % size, 0) << name;
    by_offset.push_back(t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  std::int64_t at = 0;
  for (const auto& t : by_offset) {
    EXPECT_EQ(t.begin, at);
    at = t.end;
  }
  EXPECT_EQ(static_cast<std::size_t>(at), f.bytes.size() - f.data_start());
}

void check_tensors(const StFile& f, const Table& expected) {
  EXPECT_EQ(f.tensors.size(), expected.size());
  for (const auto& [name, e] : expected) {
    auto it = f.tensors.find(name);
    ASSERT_NE(it, f.tensors.end()) << "missing " << name;
    EXPECT_EQ(it->second.shape, e.shape) << name;
    EXPECT_EQ(it->second.dtype, e.dtype) << name;
  }
}

// gpt_oss's and smollm3's chat template is its own file, chat_template.jinja, as released.
bool own_template_file(Family f) { return family_record(f).files != nullptr; }

StFile write_and_read(const GenSpec& spec, const fs::path& dir) {
  GenSummary summary;
  Status s = write_checkpoint(spec, dir.string(), &summary);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(summary.n_files, own_template_file(spec.family) ? 6 : 5);
  return read_safetensors(dir / "model.safetensors");
}

class TinyCheckpoint : public ::testing::TestWithParam<Family> {};

TEST_P(TinyCheckpoint, TensorsMatchTheSpecTable) {
  TempDir tmp;
  const StFile f = write_and_read({.family = GetParam()}, tmp.path() / "ckpt");
  check_layout(f);
  check_tensors(f, testing::tiny_hf_table(GetParam(), "BF16"));
}

TEST_P(TinyCheckpoint, DtypesF16AndF32) {
  for (auto [dtype, name] : {std::pair{DType::kF16, "F16"}, std::pair{DType::kF32, "F32"}}) {
    TempDir tmp;
    const StFile f = write_and_read({.family = GetParam(), .dtype = dtype}, tmp.path() / "c");
    check_layout(f);
    check_tensors(f, testing::tiny_hf_table(GetParam(), name));
  }
}

TEST_P(TinyCheckpoint, SameSeedSameBytesOtherSeedOtherWeights) {
  TempDir tmp;
  const GenSpec spec{.family = GetParam(), .seed = 7};
  ASSERT_TRUE(write_checkpoint(spec, (tmp.path() / "a").string()).is_ok());
  ASSERT_TRUE(write_checkpoint(spec, (tmp.path() / "b").string()).is_ok());
  GenSpec other = spec;
  other.seed = 8;
  ASSERT_TRUE(write_checkpoint(other, (tmp.path() / "c").string()).is_ok());
  int n_files = 0;
  for (const auto& entry : fs::directory_iterator(tmp.path() / "a")) {
    const auto name = entry.path().filename();
    EXPECT_EQ(slurp(entry.path()), slurp(tmp.path() / "b" / name)) << name;
    if (name == "model.safetensors") {
      EXPECT_NE(slurp(entry.path()), slurp(tmp.path() / "c" / name));
    } else {
      EXPECT_EQ(slurp(entry.path()), slurp(tmp.path() / "c" / name)) << name;
    }
    ++n_files;
  }
  EXPECT_EQ(n_files, own_template_file(GetParam()) ? 6 : 5);
}

TEST_P(TinyCheckpoint, ShardsAndIndexAgree) {
  TempDir tmp;
  const fs::path one = tmp.path() / "one", three = tmp.path() / "three";
  ASSERT_TRUE(write_checkpoint({.family = GetParam()}, one.string()).is_ok());
  GenSummary summary;
  ASSERT_TRUE(
      write_checkpoint({.family = GetParam(), .shards = 3}, three.string(), &summary).is_ok());
  EXPECT_EQ(summary.n_files, own_template_file(GetParam()) ? 9 : 8);
  EXPECT_FALSE(fs::exists(three / "model.safetensors"));
  const Json index = parse_json_file(three / "model.safetensors.index.json");
  const StFile whole = read_safetensors(one / "model.safetensors");
  std::int64_t total = 0;
  std::size_t n_tensors = 0;
  for (int i = 1; i <= 3; ++i) {
    const std::string file = fmt::format("model-{:05d}-of-00003.safetensors", i);
    const StFile shard = read_safetensors(three / file);
    check_layout(shard);
    EXPECT_FALSE(shard.tensors.empty()) << file;
    for (const auto& [name, t] : shard.tensors) {
      EXPECT_EQ(index["weight_map"].value(name, ""), file) << name;
      total += t.end - t.begin;
      ++n_tensors;
      // Same values whichever file holds the tensor.
      const auto& w = whole.tensors.at(name);
      EXPECT_EQ(shard.bytes.substr(shard.data_start() + t.begin, t.end - t.begin),
                whole.bytes.substr(whole.data_start() + w.begin, w.end - w.begin))
          << name;
    }
  }
  EXPECT_EQ(n_tensors, whole.tensors.size());
  EXPECT_EQ(index["weight_map"].size(), whole.tensors.size());
  EXPECT_EQ(index["metadata"]["total_size"].get<std::int64_t>(), total);
}

// Qwen's tokenizer files (qwen3, qwen3_5 and the generated mamba2 share them); LFM2's are checked
// by TinyConfig.Lfm2TokenizerAndPresets.
TEST_P(TinyCheckpoint, TokenizerAndGenerationFiles) {
  if (GetParam() == Family::kLfm2 || own_template_file(GetParam())) return;
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = GetParam()}, tmp.path().string()).is_ok());
  const Json tok = parse_json_file(tmp.path() / "tokenizer.json");
  EXPECT_EQ(tok["model"]["type"], "BPE");
  EXPECT_EQ(tok["normalizer"]["type"], "NFC");
  EXPECT_EQ(tok["pre_tokenizer"]["type"], "Sequence");
  EXPECT_EQ(tok["pre_tokenizer"]["pretokenizers"][0]["behavior"], "Isolated");
  EXPECT_EQ(tok["pre_tokenizer"]["pretokenizers"][1]["use_regex"], false);
  EXPECT_EQ(tok["decoder"]["type"], "ByteLevel");
  const Json& vocab = tok["model"]["vocab"];
  EXPECT_EQ(vocab.size(), 1000u);
  EXPECT_EQ(vocab["\xC4\x8A"], 198);  // "\n" as in Qwen's vocabulary
  EXPECT_EQ(vocab["!"], 0);
  for (const Json& m : tok["model"]["merges"]) {
    ASSERT_TRUE(m.is_array() && m.size() == 2);
    EXPECT_TRUE(vocab.contains(m[0].get<std::string>() + m[1].get<std::string>())) << m;
  }
  const std::vector<std::pair<std::string, bool>> added = {
      {"<|endoftext|>", true},     {"<|im_start|>", true},  {"<|im_end|>", true},
      {"<tool_call>", false},      {"</tool_call>", false}, {"<tool_response>", false},
      {"</tool_response>", false}, {"<think>", false},      {"</think>", false}};
  ASSERT_EQ(tok["added_tokens"].size(), added.size());
  const Json cfg = parse_json_file(tmp.path() / "tokenizer_config.json");
  for (std::size_t i = 0; i < added.size(); ++i) {
    EXPECT_EQ(tok["added_tokens"][i]["content"], added[i].first);
    EXPECT_EQ(tok["added_tokens"][i]["id"], 1000 + i);
    EXPECT_EQ(tok["added_tokens"][i]["special"], added[i].second);
    const Json& d = cfg["added_tokens_decoder"][std::to_string(1000 + i)];
    EXPECT_EQ(d["content"], added[i].first);
    EXPECT_EQ(d["special"], added[i].second);
  }
  EXPECT_EQ(cfg["pad_token"], "<|endoftext|>");
  EXPECT_EQ(cfg["eos_token"], GetParam() == Family::kMamba2 ? "<|endoftext|>" : "<|im_end|>");
  const std::string tpl = cfg["chat_template"];
  EXPECT_NE(tpl.find("enable_thinking"), std::string::npos);
  EXPECT_NE(tpl.find("reasoning_content"), std::string::npos);
  EXPECT_NE(tpl.find("<|im_start|>assistant"), std::string::npos);
  const Json gen = parse_json_file(tmp.path() / "generation_config.json");
  EXPECT_EQ(gen["eos_token_id"], Json::array({1002, 1000}));
}

INSTANTIATE_TEST_SUITE_P(Families, TinyCheckpoint,
                         ::testing::Values(Family::kQwen3, Family::kQwen3_5, Family::kMamba2,
                                           Family::kLfm2, Family::kGptOss, Family::kSmolLm3),
                         [](const auto& p) { return std::string(family_name(p.param)); });

TEST(TinyConfig, Qwen3) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kQwen3}, tmp.path().string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "qwen3");
  EXPECT_EQ(c["architectures"], Json::array({"Qwen3ForCausalLM"}));
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["num_hidden_layers"], 2);
  EXPECT_EQ(c["num_attention_heads"], 4);
  EXPECT_EQ(c["num_key_value_heads"], 2);
  EXPECT_EQ(c["head_dim"], 32);
  EXPECT_EQ(c["intermediate_size"], 192);
  EXPECT_EQ(c["vocab_size"], 1024);
  EXPECT_EQ(c["tie_word_embeddings"], true);
  EXPECT_EQ(c["eos_token_id"], 1002);
  EXPECT_EQ(c["rope_theta"], 1000000);
}

TEST(TinyConfig, Qwen3_5WrapsTextConfig) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kQwen3_5}, tmp.path().string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "qwen3_5");
  EXPECT_EQ(c["architectures"], Json::array({"Qwen3_5ForConditionalGeneration"}));
  const Json& t = c["text_config"];
  EXPECT_EQ(t["model_type"], "qwen3_5_text");
  EXPECT_EQ(t["layer_types"], Json::array({"linear_attention", "linear_attention",
                                           "linear_attention", "full_attention"}));
  EXPECT_EQ(t["rope_parameters"]["partial_rotary_factor"], 0.25);
  EXPECT_EQ(t["rope_parameters"]["rope_theta"], 10000000);
  EXPECT_EQ(t["partial_rotary_factor"], 0.25);
  EXPECT_EQ(t["linear_num_key_heads"], 2);
  EXPECT_EQ(t["linear_num_value_heads"], 4);
  EXPECT_EQ(t["linear_key_head_dim"], 16);
  EXPECT_EQ(t["linear_value_head_dim"], 16);
  EXPECT_EQ(t["linear_conv_kernel_dim"], 4);
  EXPECT_EQ(t["full_attention_interval"], 4);
  EXPECT_EQ(t["head_dim"], 32);
  EXPECT_EQ(t["eos_token_id"], 1000);
  EXPECT_EQ(t["tie_word_embeddings"], true);
  EXPECT_EQ(c["tie_word_embeddings"], true);
}

TEST(TinyConfig, Mamba2WritesInfinityLikePython) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kMamba2}, tmp.path().string()).is_ok());
  const std::string text = slurp(tmp.path() / "config.json");
  EXPECT_NE(text.find("\"time_step_limit\": [\n    0.0,\n    Infinity\n  ]"), std::string::npos)
      << text;
  EXPECT_TRUE(
      Json::parse(text, nullptr, false).is_discarded());  // not strict JSON, like the real file
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "mamba2");
  EXPECT_EQ(c["num_heads"], 8);
  EXPECT_EQ(c["head_dim"], 16);
  EXPECT_EQ(c["state_size"], 16);
  EXPECT_EQ(c["n_groups"], 1);
  EXPECT_EQ(c["expand"], 2);
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["eos_token_id"], 1000);
}

// LFM2: the tiny preset in LFM2.5's spelling (layer_types, rope_parameters, tie_embedding) and
// tiny-bias in LFM2's (full_attn_idxs, rope_theta, an untied head); the tokenizer's added tokens
// first (bos 1, eos 7), and LFM2.5-Instruct's chat template byte for byte.
TEST(TinyConfig, Lfm2TokenizerAndPresets) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kLfm2}, (tmp.path() / "t").string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "t" / "config.json");
  EXPECT_EQ(c["model_type"], "lfm2");
  EXPECT_EQ(c["architectures"], Json::array({"Lfm2ForCausalLM"}));
  EXPECT_EQ(c["layer_types"], Json::array({"conv", "conv", "full_attention", "conv"}));
  EXPECT_EQ(c["block_ff_dim"], 280);
  EXPECT_EQ(c["block_multiple_of"], 64);
  EXPECT_EQ(c["block_auto_adjust_ff_dim"], true);
  EXPECT_EQ(c["rope_parameters"]["rope_theta"], 1000000.0);
  EXPECT_EQ(c["tie_embedding"], true);
  EXPECT_EQ(c["bos_token_id"], 1);
  EXPECT_EQ(c["eos_token_id"], 7);
  EXPECT_FALSE(c.contains("full_attn_idxs"));
  const Json tok = parse_json_file(tmp.path() / "t" / "tokenizer.json");
  EXPECT_EQ(tok["model"]["ignore_merges"], true);
  EXPECT_EQ(tok["model"]["vocab"]["<|im_end|>"], 7);
  EXPECT_EQ(tok["added_tokens"].size(), 14u);
  EXPECT_EQ(tok["added_tokens"][1]["content"], "<|startoftext|>");
  EXPECT_EQ(tok["added_tokens"][10]["content"], "<|tool_call_start|>");
  EXPECT_EQ(tok["added_tokens"][10]["special"], false);
  const Json tc = parse_json_file(tmp.path() / "t" / "tokenizer_config.json");
  EXPECT_EQ(tc["bos_token"], "<|startoftext|>");
  EXPECT_EQ(tc["eos_token"], "<|im_end|>");
  EXPECT_EQ(
      tc["chat_template"].get<std::string>(),
      slurp(fs::path(RECUR_SOURCE_DIR) / "tests/template/chat_templates/LFM2.5-Instruct.jinja"));

  ASSERT_TRUE(write_checkpoint({.family = Family::kLfm2, .preset = "tiny-bias"},
                               (tmp.path() / "b").string())
                  .is_ok());
  const Json b = parse_json_file(tmp.path() / "b" / "config.json");
  EXPECT_EQ(b["full_attn_idxs"], Json::array({2}));
  EXPECT_EQ(b["rope_theta"], 1000000.0);
  EXPECT_EQ(b["conv_bias"], true);
  EXPECT_EQ(b["tie_embedding"], false);
  EXPECT_FALSE(b.contains("layer_types"));
  const StFile f = read_safetensors(tmp.path() / "b" / "model.safetensors");
  EXPECT_TRUE(f.tensors.contains("lm_head.weight"));
  EXPECT_TRUE(f.tensors.contains("model.layers.0.conv.conv.bias"));
}

// Llama: Llama 3's tokenizer files (special tokens after the BPE, the <|begin_of_text|>
// post-processor, ignore_merges, Llama 3.1's chat template) and both tiny presets' configs.
TEST(TinyConfig, LlamaTokenizerAndPresets) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kLlama}, tmp.path().string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_EQ(c["architectures"], Json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(c["tie_word_embeddings"], false);
  EXPECT_EQ(c["head_dim"], 16);
  EXPECT_EQ(c["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(c["bos_token_id"], 1000);
  EXPECT_EQ(c["eos_token_id"], Json::array({1001, 1008, 1009}));
  const Json tok = parse_json_file(tmp.path() / "tokenizer.json");
  EXPECT_EQ(tok["model"]["ignore_merges"], true);
  EXPECT_TRUE(tok["model"]["merges"][0].is_string());
  EXPECT_EQ(tok["added_tokens"].size(), 256u);
  EXPECT_EQ(tok["added_tokens"][0]["content"], "<|begin_of_text|>");
  EXPECT_EQ(tok["added_tokens"][9]["content"], "<|eot_id|>");
  EXPECT_EQ(tok["added_tokens"][9]["id"], 1009);
  EXPECT_EQ(tok["post_processor"]["processors"][1]["special_tokens"]["<|begin_of_text|>"]["ids"],
            Json::array({1000}));
  const Json cfg = parse_json_file(tmp.path() / "tokenizer_config.json");
  EXPECT_EQ(cfg["bos_token"], "<|begin_of_text|>");
  EXPECT_EQ(cfg["eos_token"], "<|eot_id|>");
  const std::string tpl = cfg["chat_template"];
  EXPECT_TRUE(tpl.starts_with("{{- bos_token }}"));
  EXPECT_TRUE(tpl.ends_with("{%- endif %}"));
  EXPECT_NE(tpl.find("Today Date: \" + date_string"), std::string::npos);

  TempDir bias;
  ASSERT_TRUE(
      write_checkpoint({.family = Family::kLlama, .preset = "tiny-bias"}, bias.path().string())
          .is_ok());
  const Json b = parse_json_file(bias.path() / "config.json");
  EXPECT_EQ(b["attention_bias"], true);
  EXPECT_EQ(b["mlp_bias"], true);
  EXPECT_EQ(b["tie_word_embeddings"], true);
  EXPECT_FALSE(b.contains("head_dim"));
  EXPECT_TRUE(b["rope_scaling"].is_null());
}

// gpt-oss's files as released: config.json's keys, the harmony tokens after the BPE (at the real
// ids, 199998.., in the real presets), o200k's pre-tokenizer, generation_config's three stop
// tokens, and chat_template.jinja byte for byte the released template.
TEST(TinyConfig, GptOssFilesAndPresets) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kGptOss}, tmp.path().string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "gpt_oss");
  EXPECT_EQ(c["architectures"], Json::array({"GptOssForCausalLM"}));
  EXPECT_EQ(c["layer_types"], Json::array({"sliding_attention", "full_attention"}));
  EXPECT_EQ(c["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(c["rope_scaling"]["truncate"], false);
  EXPECT_EQ(c["quantization_config"]["quant_method"], "mxfp4");
  EXPECT_EQ(c["swiglu_limit"], 7.0);
  EXPECT_EQ(c["eos_token_id"], 1004);  // <|return|>
  EXPECT_EQ(c["pad_token_id"], 1001);  // <|endoftext|>
  const Json gen = parse_json_file(tmp.path() / "generation_config.json");
  EXPECT_EQ(gen["eos_token_id"], Json::array({1004, 1001, 1014}));
  EXPECT_EQ(gen["bos_token_id"], 1000);
  const Json tok = parse_json_file(tmp.path() / "tokenizer.json");
  EXPECT_TRUE(tok["normalizer"].is_null());
  const std::string regex = tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"];
  EXPECT_TRUE(regex.starts_with("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"))
      << regex;
  ASSERT_EQ(tok["added_tokens"].size(), 1090u);
  for (auto [offset, name] : {std::pair{0, "<|startoftext|>"},
                              {1, "<|endoftext|>"},
                              {2, "<|reserved_200000|>"},
                              {4, "<|return|>"},
                              {5, "<|constrain|>"},
                              {7, "<|channel|>"},
                              {8, "<|start|>"},
                              {9, "<|end|>"},
                              {10, "<|message|>"},
                              {14, "<|call|>"},
                              {1089, "<|reserved_201087|>"}}) {
    EXPECT_EQ(tok["added_tokens"][offset]["content"], name);
    EXPECT_EQ(tok["added_tokens"][offset]["id"], 1000 + offset);
    EXPECT_EQ(tok["added_tokens"][offset]["special"], true);
  }
  const Json cfg = parse_json_file(tmp.path() / "tokenizer_config.json");
  EXPECT_EQ(cfg["bos_token"], "<|startoftext|>");
  EXPECT_EQ(cfg["eos_token"], "<|return|>");
  EXPECT_FALSE(cfg.contains("chat_template"));
  EXPECT_EQ(slurp(tmp.path() / "chat_template.jinja"),
            slurp(fs::path(RECUR_SOURCE_DIR) /
                  "tests/template/chat_templates/openai-gpt-oss-120b.jinja"));

  // The real presets' geometry, without writing tens of GB: --layers 1 --hidden-size 64 keeps
  // the vocabulary and so the real token ids.
  TempDir real;
  ASSERT_TRUE(
      write_checkpoint(
          {.family = Family::kGptOss, .preset = "gpt-oss-20b", .layers = 1, .hidden_size = 64},
          real.path().string())
          .is_ok());
  const Json r = parse_json_file(real.path() / "config.json");
  EXPECT_EQ(r["vocab_size"], 201088);
  EXPECT_EQ(r["num_local_experts"], 32);
  EXPECT_EQ(r["eos_token_id"], 200002);
  EXPECT_EQ(parse_json_file(real.path() / "generation_config.json")["eos_token_id"],
            Json::array({200002, 199999, 200012}));
}

// SmolLM3's files: config.json's NoPE keys per preset (tiny: no no_rope_layers, the interval's
// default; tiny-list: the explicit list, a window, biases, tied), Llama 3's split without
// ignore_merges or a <|begin_of_text|> post-processor, the added tokens at Llama 3's ids from
// 128000 in the real preset, and Unsloth's chat template as chat_template.jinja.
TEST(TinyConfig, SmolLm3FilesAndPresets) {
  TempDir tmp;
  ASSERT_TRUE(write_checkpoint({.family = Family::kSmolLm3}, tmp.path().string()).is_ok());
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["model_type"], "smollm3");
  EXPECT_FALSE(c.contains("no_rope_layers"));
  EXPECT_EQ(c["no_rope_layer_interval"], 4);
  EXPECT_EQ(c["tie_word_embeddings"], false);
  EXPECT_EQ(c["eos_token_id"], 1012);  // <|im_end|>
  EXPECT_EQ(c["pad_token_id"], 1004);
  const Json tok = parse_json_file(tmp.path() / "tokenizer.json");
  EXPECT_EQ(tok["model"]["ignore_merges"], false);
  EXPECT_EQ(tok["post_processor"]["type"], "ByteLevel");
  const std::string regex = tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"];
  EXPECT_TRUE(regex.find("\\p{N}{1,3}") != std::string::npos) << regex;
  ASSERT_EQ(tok["added_tokens"].size(), 256u);
  for (auto [offset, name, special] : {std::tuple{0, "<|begin_of_text|>", true},
                                       {1, "<|end_of_text|>", true},
                                       {2, "<think>", false},
                                       {3, "</think>", false},
                                       {11, "<|im_start|>", true},
                                       {12, "<|im_end|>", true},
                                       {15, "<tool_call>", false},
                                       {255, "<|reserved_special_token_255|>", true}}) {
    EXPECT_EQ(tok["added_tokens"][offset]["content"], name);
    EXPECT_EQ(tok["added_tokens"][offset]["id"], 1000 + offset);
    EXPECT_EQ(tok["added_tokens"][offset]["special"], special);
  }
  const Json cfg = parse_json_file(tmp.path() / "tokenizer_config.json");
  EXPECT_EQ(cfg["eos_token"], "<|im_end|>");
  EXPECT_FALSE(cfg.contains("chat_template"));
  EXPECT_EQ(slurp(tmp.path() / "chat_template.jinja"),
            slurp(fs::path(RECUR_SOURCE_DIR) /
                  "tests/template/chat_templates/HuggingFaceTB-SmolLM3-3B.jinja"));

  TempDir list;
  ASSERT_TRUE(
      write_checkpoint({.family = Family::kSmolLm3, .preset = "tiny-list"}, list.path().string())
          .is_ok());
  const Json l = parse_json_file(list.path() / "config.json");
  EXPECT_EQ(l["no_rope_layers"], Json::array({0, 1, 0, 1}));
  EXPECT_EQ(l["use_sliding_window"], true);
  EXPECT_EQ(l["sliding_window"], 8);
  EXPECT_FALSE(l.contains("layer_types"));
  EXPECT_FALSE(l.contains("tie_word_embeddings"));
  EXPECT_EQ(l["head_dim"], 16);
  EXPECT_EQ(l["attention_bias"], true);

  TempDir real;
  ASSERT_TRUE(
      write_checkpoint(
          {.family = Family::kSmolLm3, .preset = "smollm3-3b", .layers = 1, .hidden_size = 64},
          real.path().string())
          .is_ok());
  const Json r = parse_json_file(real.path() / "config.json");
  EXPECT_EQ(r["vocab_size"], 128256);
  EXPECT_EQ(r["eos_token_id"], 128012);
  EXPECT_EQ(r["bos_token_id"], 128000);
  EXPECT_EQ(parse_json_file(real.path() / "generation_config.json")["eos_token_id"],
            Json::array({128012, 128001}));
  const Json rt = parse_json_file(real.path() / "tokenizer.json");
  EXPECT_EQ(rt["added_tokens"][12]["id"], 128012);
}

TEST(WriteCheckpoint, RefusesBadRequests) {
  TempDir tmp;
  const std::string out = (tmp.path() / "x").string();
  EXPECT_EQ(write_checkpoint({.family = Family::kQwen3, .preset = "mamba2-130m"}, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(write_checkpoint({.family = Family::kQwen3, .vocab_size = 500}, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(write_checkpoint({.family = Family::kMamba2, .hidden_size = 100}, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(write_checkpoint({.family = Family::kQwen3, .shards = 10000}, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(write_checkpoint({.family = Family::kQwen3}, "").code(), StatusCode::kInvalidArgument);
  // Nothing is left behind: no output, no temporary folder.
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

TEST(WriteCheckpoint, ReplacesACheckpointButNotOtherFolders) {
  TempDir tmp;
  const fs::path out = tmp.path() / "ckpt";
  ASSERT_TRUE(write_checkpoint({.family = Family::kQwen3, .shards = 2}, out.string()).is_ok());
  ASSERT_TRUE(write_checkpoint({.family = Family::kMamba2}, out.string()).is_ok());
  EXPECT_FALSE(fs::exists(out / "model.safetensors.index.json"));  // the old files are gone
  EXPECT_EQ(parse_json_file(out / "config.json")["model_type"], "mamba2");
  int n_entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++n_entries;
  EXPECT_EQ(n_entries, 1);  // no temporary or old folder left beside it

  const fs::path other = tmp.path() / "other";
  fs::create_directories(other);
  { std::ofstream(other / "notes.txt") << "keep me"; }
  EXPECT_EQ(write_checkpoint({.family = Family::kQwen3}, other.string()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(slurp(other / "notes.txt"), "keep me");
}

TEST(WriteCheckpoint, OverridesScaleTheGeometry) {
  TempDir tmp;
  const GenSpec spec{
      .family = Family::kQwen3_5, .layers = 8, .hidden_size = 128, .vocab_size = 2048};
  const StFile f = write_and_read(spec, tmp.path());
  check_layout(f);
  check_tensors(f, testing::qwen3_5_table({.layers = 8,
                                           .d = 128,
                                           .heads = 8,
                                           .kv_heads = 4,
                                           .hd = 32,
                                           .ff = 384,
                                           .vocab = 2048,
                                           .hk = 4,
                                           .hv = 8,
                                           .dk = 16,
                                           .dv = 16,
                                           .kernel = 4},
                                          "BF16"));
  const Json c = parse_json_file(tmp.path() / "config.json");
  EXPECT_EQ(c["text_config"]["layer_types"][7], "full_attention");
  EXPECT_EQ(c["text_config"]["layer_types"][6], "linear_attention");
  EXPECT_EQ(c["text_config"]["num_attention_heads"], 8);
}

}  // namespace
}  // namespace recur::modelgen

namespace recur::modelgen {
namespace {

// --eos-bias: hidden dimension 0 of every embedding (and untied head) row is the constant channel,
// the end-of-turn token's row has `bias` more of it, and every other value is the plain seed's.
TEST(EosBias, SetsTheConstantChannelAndTheEndOfTurnRowOnly) {
  TempDir tmp;
  const GenSpec plain{.family = Family::kLlama, .seed = 7};
  GenSpec biased = plain;
  biased.eos_bias = 6;
  ASSERT_TRUE(write_checkpoint(plain, (tmp.path() / "a").string()).is_ok());
  ASSERT_TRUE(write_checkpoint(biased, (tmp.path() / "b").string()).is_ok());
  const StFile a = read_safetensors(tmp.path() / "a" / "model.safetensors");
  const StFile b = read_safetensors(tmp.path() / "b" / "model.safetensors");
  ASSERT_TRUE(a.error.empty() && b.error.empty());
  const auto config = nlohmann::json::parse(slurp(tmp.path() / "b" / "config.json"));
  const auto tok = nlohmann::json::parse(slurp(tmp.path() / "b" / "tokenizer.json"));
  std::int64_t eot = -1;
  for (const auto& t : tok["added_tokens"]) {
    if (t["content"] == "<|eot_id|>") eot = t["id"].get<std::int64_t>();
  }
  ASSERT_GE(eot, 0);
  const std::int64_t d = config["hidden_size"].get<std::int64_t>();
  const std::string embed = "model.embed_tokens.weight";
  const std::int64_t n = b.tensors.at(embed).shape[0] * d;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = i / d, col = i % d;
    if (col != 0) {
      ASSERT_EQ(a.value(embed, i), b.value(embed, i)) << i;
    } else {
      ASSERT_EQ(b.value(embed, i), row == eot ? 8.0f : 2.0f) << "row " << row;
    }
  }
  for (const auto& [name, t] : a.tensors) {
    if (name == embed || name == "lm_head.weight") continue;
    const auto& u = b.tensors.at(name);
    const bool same = a.bytes.compare(a.data_start() + t.begin, t.end - t.begin, b.bytes,
                                      b.data_start() + u.begin, u.end - u.begin) == 0;
    EXPECT_TRUE(same) << name;
  }
}

}  // namespace
}  // namespace recur::modelgen
