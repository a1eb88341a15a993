// StreamingDetokenizer on the real tokenizers: the pushed pieces concatenate to the full decode,
// each piece is whole UTF-8, and stop strings are found across token boundaries.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer {
namespace {

using testing::real;

const char* kText =
    "Hello, world! 你好，世界 🦊👩‍👩‍👧 e\xCC\x81 ŧėşŧ\n\n  indented\tcode() "
    "{ "
    "return "
    "42; "
    "}\n"
    "Ǆ ꙮ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᚠᛇᚻ 𓀀 ∰";

class StreamingAll : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingAll, PiecesConcatenateToTheFullDecode) {
  const Tokenizer& tok = real(GetParam());
  std::vector<TokenId> ids = tok.encode(kText);
  StreamingDetokenizer stream(tok);
  std::string joined;
  for (TokenId id : ids) {
    std::string piece = stream.push(id);
    EXPECT_TRUE(detail::utf8_is_valid(piece)) << "split character after id " << id;
    joined += piece;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, tok.decode(ids));
  EXPECT_FALSE(stream.stopped());
}

INSTANTIATE_TEST_SUITE_P(Families, StreamingAll,
                         ::testing::Values("qwen3", "llama3", "deepseek_v3", "gemma3"));

TEST(Streaming, StopStringAcrossTokens) {
  const Tokenizer& tok = real("qwen3");
  std::vector<TokenId> ids = tok.encode("The answer is 42. Observation: done");
  StreamingDetokenizer stream(tok, {"Observation:", "42!"});
  std::string out;
  for (TokenId id : ids) {
    out += stream.push(id);
    if (stream.stopped()) break;
  }
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(stream.stop_index(), 0u);
  EXPECT_EQ(out, "The answer is 42. ");
  EXPECT_EQ(stream.push(ids[0]), "");  // nothing after a stop
}

TEST(Streaming, HoldsBackAPossibleStopStart) {
  const Tokenizer& tok = real("qwen3");
  StreamingDetokenizer stream(tok, {"</answer>"});
  std::string out;
  for (TokenId id : tok.encode("x </ans")) out += stream.push(id);
  EXPECT_EQ(out, "x ");  // "</ans" may still become the stop string
  out += stream.finish();
  EXPECT_EQ(out, "x </ans");
  EXPECT_FALSE(stream.stopped());
}

TEST(Streaming, StopStringInsideOneToken) {
  const Tokenizer& tok = real("qwen3");
  StreamingDetokenizer stream(tok, {"<|im_end|>"});
  std::string out;
  for (TokenId id : tok.encode("Sure.<|im_end|>ignored")) out += stream.push(id);
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(out, "Sure.");
}

TEST(Streaming, SkipSpecial) {
  const Tokenizer& tok = real("qwen3");
  StreamingDetokenizer stream(tok, {}, /*skip_special=*/true);
  std::string out;
  for (TokenId id : tok.encode("<|im_start|>assistant\nHi<|im_end|>")) out += stream.push(id);
  out += stream.finish();
  EXPECT_EQ(out, "assistant\nHi");
}

TEST(Streaming, EmojiBytesAreHeldUntilComplete) {
  const Tokenizer& tok = real("qwen3");
  std::vector<TokenId> ids = tok.encode("𓀀");
  ASSERT_GT(ids.size(), 1u);  // a rare character is several byte tokens
  StreamingDetokenizer stream(tok);
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(stream.push(ids[i]), "");
  EXPECT_EQ(stream.push(ids.back()), "𓀀");
}

TEST(Streaming, UnfinishedCharacterAtTheEndBecomesReplacement) {
  const Tokenizer& tok = real("qwen3");
  std::vector<TokenId> ids = tok.encode("𓀀");
  StreamingDetokenizer stream(tok);
  std::string out = stream.push(ids[0]);
  out += stream.finish();
  EXPECT_EQ(out, tok.decode(std::span(ids).first(1)));
  EXPECT_TRUE(detail::utf8_is_valid(out));
}

}  // namespace
}  // namespace recur::tokenizer

namespace recur::tokenizer {
namespace {

// Found by fuzz_detokenizer: with byte fallback, one invalid byte turns every byte token of its
// run into U+FFFD, so a run's text is not final until the run ends; the streamed text must still
// equal the full decode (fuzz/regressions/fuzz_detokenizer).
TEST(Streaming, ByteFallbackRunsAreFinalOnlyWhenTheyEnd) {
  std::string json = R"({"decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"},
      {"type": "Fuse"}]},
    "model": {"type": "BPE", "byte_fallback": true, "merges": [],
      "vocab": {"a": 0, "<0x32>": 1, "<0x9E>": 2, "<0x72>": 3, "<0xC5>": 4, "<0xE4>": 5,
                "<0xBD>": 6, "<0xA0>": 7}}})";
  auto tok = Tokenizer::load(json, "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  auto stream_all = [&](std::vector<TokenId> ids, std::vector<std::string> stops = {}) {
    StreamingDetokenizer stream(*tok, std::move(stops));
    std::string out;
    for (TokenId id : ids) out += stream.push(id);
    return out + stream.finish();
  };
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(tok->decode(std::vector<TokenId>{1, 2}), fffd + fffd);  // "2" then a stray byte
  EXPECT_EQ(stream_all({1, 2}), fffd + fffd);
  EXPECT_EQ(stream_all({1, 2, 0}), fffd + fffd + "a");
  EXPECT_EQ(stream_all({1, 4}), fffd + fffd);  // an unfinished character at the end
  EXPECT_EQ(stream_all({5, 6, 7, 0}),
            "\xE4\xBD\xA0"
            "a");
  // "r" inside a run that turns invalid was never text: no stop.
  EXPECT_EQ(stream_all({3, 2, 0}, {"r"}), fffd + fffd + "a");
  EXPECT_EQ(stream_all({1, 3, 0, 1}, {"r"}), "2");
  StreamingDetokenizer held(*tok);
  EXPECT_EQ(held.push(1), "");  // held until the run ends
  EXPECT_EQ(held.push(0), "2a");
}

// Llama 2 style: the decoder drops the "▁" the pre-tokenizer put before the first word only.
TEST(Streaming, MetaspaceFirstTokenSpace) {
  std::string json = R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "▁",
      "prepend_scheme": "always", "split": true},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
    "model": {"type": "BPE", "vocab": {"▁": 0, "a": 1, "▁a": 2, "b": 3}, "merges": ["▁ a"]}})";
  auto tok = Tokenizer::load(json, "");
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  std::vector<TokenId> ids = tok->encode("a a ba");
  ASSERT_EQ(tok->decode(ids), "a a ba");
  StreamingDetokenizer stream(*tok);
  std::string out;
  for (TokenId id : ids) out += stream.push(id);
  out += stream.finish();
  EXPECT_EQ(out, "a a ba");
}

}  // namespace
}  // namespace recur::tokenizer
