// Tokenizer API on the real tokenizers: known ids (from the HF oracle), special-token options,
// config fields, invalid UTF-8, thread safety; and small hand-written tokenizer.json files for
// features the real ones do not use (legacy merges, ignore_merges, Metaspace, added-token flags).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "test_util.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer {
namespace {

using testing::real;
using Ids = std::vector<TokenId>;

TEST(Qwen3, KnownIdsFromTheOracle) {
  const Tokenizer& tok = real("qwen3");
  EXPECT_EQ(tok.encode("Hello <|im_start|> world<think>  123456"),
            (Ids{9707, 220, 151644, 1879, 151667, 220, 220, 16, 17, 18, 19, 20, 21}));
  EXPECT_EQ(tok.vocab_size(), 151669u);
  EXPECT_EQ(tok.token_id("<|im_end|>"), 151645);
  EXPECT_EQ(tok.token_text(151667), "<think>");
  EXPECT_TRUE(tok.is_special(151644));
  EXPECT_FALSE(tok.is_special(151667));  // <think> is atomic but not special
}

TEST(Qwen3, ParseSpecialFalseKeepsSpecialTokensAsText) {
  const Tokenizer& tok = real("qwen3");
  Ids ids = tok.encode("<|im_start|>user", {.parse_special = false});
  for (TokenId id : ids) EXPECT_FALSE(tok.is_special(id)) << id;
  EXPECT_EQ(tok.decode(ids), "<|im_start|>user");
  // Non-special added tokens stay atomic, as HF's encode_special_tokens does.
  EXPECT_EQ(tok.encode("<think>", {.parse_special = false}), (Ids{151667}));
}

TEST(Qwen3, ConfigFields) {
  const Tokenizer& tok = real("qwen3");
  ASSERT_TRUE(tok.chat_template().has_value());
  EXPECT_NE(tok.chat_template()->find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(tok.special_tokens().eos_token, "<|im_end|>");
  EXPECT_EQ(tok.eos_id(), 151645);
  EXPECT_FALSE(tok.special_tokens().bos_token.has_value());
  EXPECT_FALSE(tok.bos_id().has_value());
  EXPECT_FALSE(tok.special_tokens().add_bos_token);
}

TEST(DeepSeekV3, AddedTokenObjectsInConfig) {
  const Tokenizer& tok = real("deepseek_v3");
  EXPECT_EQ(tok.special_tokens().bos_token,
            "<\xEF\xBD\x9C"
            "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>");
  EXPECT_TRUE(tok.special_tokens().add_bos_token);
  EXPECT_EQ(tok.bos_id(), 0);
  EXPECT_EQ(tok.eos_id(), 1);
}

TEST(Gemma3, PostProcessorAddsBos) {
  const Tokenizer& tok = real("gemma3");
  Ids plain = tok.encode("Hello world");
  Ids with_bos = tok.encode("Hello world", {.add_special_tokens = true});
  ASSERT_EQ(with_bos.size(), plain.size() + 1);
  EXPECT_EQ(with_bos[0], 2);
  EXPECT_EQ(Ids(with_bos.begin() + 1, with_bos.end()), plain);
  EXPECT_EQ(tok.decode(with_bos, /*skip_special=*/true), "Hello world");
  EXPECT_EQ(tok.decode(with_bos), "<bos>Hello world");
}

TEST(Tokenizer, InvalidUtf8IsEncodedAsReplacementCharacter) {
  const Tokenizer& tok = real("qwen3");
  EXPECT_EQ(tok.encode("a\xFF b\xE2\x82"), tok.encode("a\xEF\xBF\xBD b\xEF\xBF\xBD"));
}

TEST(Tokenizer, RandomBytesRoundTripAsRepairedText) {
  // Llama 3 has no normalizer: decode(encode(x)) is x with invalid UTF-8 replaced by U+FFFD.
  const Tokenizer& tok = real("llama3");
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 0x20 + rng() % 0x60);
    ASSERT_EQ(tok.decode(tok.encode(bytes)), detail::utf8_repair(bytes)) << i;
  }
}

TEST(Tokenizer, DecodeSkipsUnknownIds) {
  const Tokenizer& tok = real("qwen3");
  EXPECT_EQ(tok.decode(Ids{9707, -1, 999999999, 1879}), "Hello world");
}

TEST(Tokenizer, ConcurrentEncodesAgreeWithSequentialOnes) {
  const Tokenizer& tok = real("qwen3");
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    texts.push_back("Thread " + std::to_string(i) + ": the quick brown fox 日本語 🦊 " +
                    std::string(static_cast<std::size_t>(i % 7), ' ') + std::to_string(i * 7919));
  }
  std::vector<Ids> want;
  for (const auto& t : texts) want.push_back(tok.encode(t));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        for (std::size_t i = 0; i < texts.size(); ++i) {
          if (tok.encode(texts[(i + t) % texts.size()]) != want[(i + t) % texts.size()]) ++bad[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

TEST(Tokenizer, MovedTokenizerKeepsWorking) {
  auto tok = Tokenizer::load_dir(testing::family_dir("qwen3"));
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  Tokenizer moved = std::move(tok).value();
  Tokenizer again = std::move(moved);
  EXPECT_EQ(again.encode("Hello world"), (Ids{9707, 1879}));
}

// A tiny byte-level vocabulary: "a"=0 "b"=1 "c"=2 "ab"=3 "abc"=4 "Ġ"=5 "Ġa"=6, plus <s>=7.
std::string tiny_json(std::string_view merges, std::string_view extra_model = "",
                      std::string_view added = "[]", std::string_view pre = "") {
  std::string pre_tok =
      pre.empty() ? R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})"
                  : std::string(pre);
  return fmt::format(
      R"({{"added_tokens": {}, "normalizer": null, "pre_tokenizer": {},
          "decoder": {{"type": "ByteLevel"}},
          "model": {{"type": "BPE", {} "vocab": {{"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4,
          "Ġ": 5, "Ġa": 6, "<s>": 7}}, "merges": {}}}}})",
      added, pre_tok, extra_model, merges);
}

TEST(TinyBpe, LegacyAndPairMergeFormatsAgree) {
  auto legacy = Tokenizer::load(tiny_json(R"(["a b", "ab c", "Ġ a"])"), "");
  auto pairs = Tokenizer::load(tiny_json(R"([["a","b"], ["ab","c"], ["Ġ","a"]])"), "");
  ASSERT_TRUE(legacy.is_ok()) << legacy.status().to_string();
  ASSERT_TRUE(pairs.is_ok()) << pairs.status().to_string();
  EXPECT_EQ(legacy->encode("abc a"), (Ids{4, 6}));
  EXPECT_EQ(pairs->encode("abc a"), (Ids{4, 6}));
  EXPECT_EQ(legacy->decode(Ids{4, 6}), "abc a");
}

TEST(TinyBpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  // Without the merge "ab c", "abc" can only be reached as a whole vocabulary word.
  auto with = Tokenizer::load(tiny_json(R"(["a b"])", R"("ignore_merges": true,)"), "");
  auto without = Tokenizer::load(tiny_json(R"(["a b"])"), "");
  ASSERT_TRUE(with.is_ok() && without.is_ok());
  EXPECT_EQ(with->encode("abc"), (Ids{4}));
  EXPECT_EQ(without->encode("abc"), (Ids{3, 2}));
}

TEST(TinyBpe, AddedTokenFlags) {
  std::string added =
      R"([{"id": 7, "content": "<s>", "special": true, "lstrip": true, "rstrip": true,
           "normalized": false, "single_word": false}])";
  auto tok = Tokenizer::load(tiny_json(R"(["a b", "Ġ a"])", "", added), "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  // lstrip/rstrip: the spaces around <s> belong to it.
  EXPECT_EQ(tok->encode("a <s> a"), (Ids{0, 7, 0}));
  std::string single =
      R"([{"id": 7, "content": "<s>", "special": true, "single_word": true, "normalized": false}])";
  auto sw = Tokenizer::load(tiny_json(R"(["a b", "Ġ a"])", "", single), "");
  ASSERT_TRUE(sw.is_ok());
  EXPECT_EQ(sw->encode("a <s> a"), (Ids{0, 5, 7, 6}));
  Ids glued = sw->encode("a<s>");  // next to a word: not matched
  EXPECT_EQ(std::count(glued.begin(), glued.end(), 7), 0);
}

TEST(TinyBpe, MetaspacePrependFirst) {
  std::string json = R"({"added_tokens": [{"id": 3, "content": "<s>", "special": true}],
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"},
    "model": {"type": "BPE", "vocab": {"▁": 0, "a": 1, "▁a": 2, "<s>": 3}, "merges": ["▁ a"]}})";
  auto tok = Tokenizer::load(json, "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("a a"), (Ids{2, 2}));
  EXPECT_EQ(tok->encode("<s>a a"), (Ids{3, 1, 2}));  // only the start of the text gets "▁"
  EXPECT_EQ(tok->decode(Ids{2, 2}), "a a");
}

TEST(TinyBpe, DigitsAndTemplateProcessing) {
  std::string json = R"({"added_tokens": [{"id": 3, "content": "<s>", "special": true}],
    "pre_tokenizer": {"type": "Digits", "individual_digits": true},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
        {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [3]}}},
    "model": {"type": "BPE", "vocab": {"1": 0, "2": 1, "12": 2, "<s>": 3}, "merges": ["1 2"]}})";
  auto tok = Tokenizer::load(json, "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("12"), (Ids{0, 1}));  // split into single digits before BPE
  EXPECT_EQ(tok->encode("12", {.add_special_tokens = true}), (Ids{3, 0, 1}));
}

}  // namespace
}  // namespace recur::tokenizer
