// Malformed tokenizer files: every rejection names the field (JSON path), and no corruption
// (truncation, byte flips) crashes the loader or a later encode/decode.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"
#include "util/mmap_file.h"

namespace recur::tokenizer {
namespace {

constexpr const char* kValid = R"({
  "added_tokens": [{"id": 5, "content": "<s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\s+|\\w+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "post_processor": null,
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "c": 4, "<s>": 5, "abc": 6},
            "merges": [["a", "b"], "ab c"]}
})";

std::string with(std::string_view from, std::string_view to) {
  std::string s = kValid;
  std::size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

void expect_error(const std::string& json, std::string_view where) {
  auto tok = Tokenizer::load(json, "");
  ASSERT_FALSE(tok.is_ok());
  EXPECT_NE(tok.status().message().find(where), std::string::npos) << tok.status().to_string();
}

TEST(Malformed, ValidBaseLoads) {
  auto tok = Tokenizer::load(kValid, "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("ab <s>"), (std::vector<TokenId>{2, 3, 5}));
}

TEST(Malformed, ErrorsNameTheField) {
  expect_error("{\"model\": ", "invalid JSON near byte");
  expect_error(with(R"(["a", "b"])", R"(["a", "zz"])"), "model.merges[0]");
  expect_error(with(R"("ab c")", R"("ab  c")"), "model.merges[1]");
  expect_error(with(R"("ab c")", R"(42)"), "model.merges[1]");
  expect_error(with(R"("ab": 2)", R"("ab": -2)"), "model.vocab.ab");
  expect_error(with(R"("ab": 2)", R"("ab": "2")"), "model.vocab.ab");
  expect_error(with(R"("ab": 2)", R"("ab": 1)"), "model.vocab.ab");
  expect_error(with(R"("content": "<s>")", R"("contents": "<s>")"), "added_tokens[0].content");
  expect_error(with(R"({"type": "NFC"})", R"({"type": "Magic"})"),
               "normalizer.normalizers[0].type");
  expect_error(with(R"(\\s+|\\w+)", R"(\\s+|(\\w+)"), "pre_tokenizer.pretokenizers[0].pattern");
  expect_error(with(R"("Isolated")", R"("Sideways")"), "pre_tokenizer.pretokenizers[0].behavior");
  expect_error(with(R"("type": "BPE")", R"("type": "WordPiece")"), "model.type");
  expect_error(with(R"("decoder": {"type": "ByteLevel"})", R"("decoder": {"type": 7})"),
               "decoder.type");
  expect_error(
      with(
          R"("post_processor": null)",
          R"("post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>"}}]})"),
      "post_processor.single[0]");
}

TEST(Malformed, ConfigErrorsNameTheField) {
  auto tok = Tokenizer::load(kValid, R"({"bos_token": 3})");
  ASSERT_FALSE(tok.is_ok());
  EXPECT_NE(tok.status().message().find("bos_token"), std::string::npos);
  auto tpl = Tokenizer::load(kValid, R"({"chat_template": [{"name": "default"}]})");
  ASSERT_FALSE(tpl.is_ok());
  EXPECT_NE(tpl.status().message().find("chat_template[0].template"), std::string::npos);
}

// Found by fuzz_tokenizer_json: Sequence steps nested thousands deep overflowed the stack in the
// recursive loader (fuzz/regressions/fuzz_tokenizer_json).
TEST(Malformed, DeepNestingIsAnErrorNotACrash) {
  for (std::string_view step :
       {R"({"type": "Sequence", "normalizers": [)", R"({"type": "Sequence", "pretokenizers": [)"}) {
    std::string deep;
    for (int i = 0; i < 20000; ++i) deep += step;
    deep += R"({"type": "NFC"})";
    for (int i = 0; i < 20000; ++i) deep += "]}";
    std::string key =
        step.find("normalizers") != std::string_view::npos
            ? R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]})"
            : R"("decoder": {"type": "ByteLevel"})";
    std::string value = step.find("normalizers") != std::string_view::npos
                            ? R"("normalizer": )" + deep
                            : R"("decoder": {"type": "ByteLevel"}, "pre_tokenizer": )" + deep;
    expect_error(with(key, value), "nested deeper than 64 levels");
  }
  // 60 levels (more than any real file) still load.
  std::string ok;
  for (int i = 0; i < 28; ++i) ok += R"({"type": "Sequence", "normalizers": [)";
  ok += R"({"type": "NFC"})";
  for (int i = 0; i < 28; ++i) ok += "]}";
  auto tok =
      Tokenizer::load(with(R"({"type": "Sequence", "normalizers": [{"type": "NFC"}]})", ok), "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("ab <s>"), (std::vector<TokenId>{2, 3, 5}));
}

// Loads json; when it loads, encoding and decoding anything must still be safe.
void load_and_use(const std::string& json) {
  auto tok = Tokenizer::load(json, "");
  if (!tok.is_ok()) return;
  std::vector<TokenId> ids = tok->encode("ab c <s> \xF0\x9F\xA6\x8A abc");
  (void)tok->decode(ids);
  (void)tok->decode(std::vector<TokenId>{0, 1, 2, 3, 4, 5, 6, -1, 1 << 30});
}

TEST(Malformed, EveryTruncationIsAnErrorNotACrash) {
  std::string s = kValid;
  for (std::size_t n = 0; n < s.size(); ++n) {
    auto tok = Tokenizer::load(s.substr(0, n), "");
    EXPECT_FALSE(tok.is_ok()) << n;
  }
}

TEST(Malformed, ByteFlipsNeverCrash) {
  std::mt19937 rng(1234);
  std::string base = kValid;
  const std::string alphabet = "{}[]\",:0123456789-ab \\nulltrue";
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    load_and_use(s);
  }
}

TEST(Malformed, RealFileWithABrokenMerge) {
  auto text = read_file(testing::family_dir("qwen3") + "/tokenizer.json");
  ASSERT_TRUE(text.is_ok());
  std::string s = *text;
  std::size_t merges = s.find("\"merges\"");
  ASSERT_NE(merges, std::string::npos);
  std::size_t first = s.find("\"\xC4\xA0\"", merges);  // the left part of the first merge
  ASSERT_NE(first, std::string::npos);
  s.replace(first, 4, "\"\xE2\x9C\x97\"");  // now a string that is not a token
  auto tok = Tokenizer::load(s, "");
  ASSERT_FALSE(tok.is_ok());
  EXPECT_NE(tok.status().message().find("model.merges[0]"), std::string::npos)
      << tok.status().to_string();
}

}  // namespace
}  // namespace recur::tokenizer
