// StreamingDetokenizer on the real tokenizers: the pushed pieces concatenate to the full decode,
// each piece is whole UTF-8, and stop strings are found across token boundaries.
#include <gtest/gtest.h>

#include <cstdio>

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

namespace recur::tokenizer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

struct Piece {
  std::string text, bytes;  // bytes: StreamingDetokenizer::bytes(), empty when they are text
};

// Streams ids as the engine does: each push's text and bytes, finish's added to the last.
std::vector<Piece> stream_pieces(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  StreamingDetokenizer stream(tok);
  std::vector<Piece> out;
  for (TokenId id : ids) {
    std::string text = stream.push(id);
    out.push_back({text, stream.bytes()});
  }
  std::string tail = stream.finish();
  if (!stream.bytes().empty() && out.back().bytes.empty()) out.back().bytes = out.back().text;
  out.back().bytes += stream.bytes().empty() ? tail : stream.bytes();
  out.back().text += tail;
  return out;
}

// Issue 47: a byte token that cannot be valid UTF-8 is U+FFFD in the text, and its bytes are its
// raw byte, alike for byte-level BPE (Qwen3) and byte fallback (Gemma 3): the byte token itself
// carries both, at once. Valid text has no separate bytes.
class StreamingBytes : public ::testing::TestWithParam<std::string> {
 protected:
  const Tokenizer& tok() const { return real(GetParam()); }
  // The id of the token that stands for one byte.
  TokenId byte_id(unsigned char b) const {
    if (GetParam() == "gemma3") {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      return *tok().token_id(name);
    }
    // Byte-level BPE: the byte's character in GPT-2's byte table.
    const char32_t cp = detail::byte_chars()[b];
    std::string name;
    if (cp < 0x80) {
      name += static_cast<char>(cp);
    } else {
      name += static_cast<char>(0xC0 | (cp >> 6));
      name += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return *tok().token_id(name);
  }
  TokenId word(const char* w) const { return tok().encode(w).at(0); }
};

TEST_P(StreamingBytes, AStrayContinuationByteIsItsOwnTokensRawByte) {
  const TokenId a = word("a");
  std::vector<Piece> got = stream_pieces(tok(), {a, byte_id(0x80), a});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].text, "a");
  EXPECT_EQ(got[0].bytes, "");
  EXPECT_EQ(got[1].text, kFffd) << "the text is the decoder's, as a full decode";
  EXPECT_EQ(got[1].bytes, "\x80") << "the bytes behind it are the raw byte";
  EXPECT_EQ(got[2].text, "a");
  EXPECT_EQ(got[2].bytes, "");
  // At the very end too.
  got = stream_pieces(tok(), {a, byte_id(0xBF)});
  EXPECT_EQ(got[1].text, kFffd);
  EXPECT_EQ(got[1].bytes, "\xBF");
}

TEST_P(StreamingBytes, ASplitValidCharacterHasNoSeparateBytes) {
  const TokenId a = word("a");
  std::vector<Piece> got = stream_pieces(tok(), {a, byte_id(0xC3), byte_id(0xA9), a});
  std::string text;
  for (const Piece& p : got) {
    EXPECT_EQ(p.bytes, "") << "valid text: the bytes are the text";
    text += p.text;
  }
  EXPECT_EQ(text,
            "a\xC3\xA9"
            "a");
  EXPECT_EQ(got[1].text, "") << "the first byte ends inside the character";
}

TEST_P(StreamingBytes, AnUnfinishedCharacterAtTheEndKeepsItsBytes) {
  const TokenId a = word("a");
  const std::vector<TokenId> ids = {a, byte_id(0xE4), byte_id(0xBD)};
  std::vector<Piece> got = stream_pieces(tok(), ids);
  std::string text, bytes;
  for (const Piece& p : got) {
    text += p.text;
    bytes += p.bytes.empty() ? p.text : p.bytes;
  }
  EXPECT_EQ(text, tok().decode(ids)) << "one U+FFFD (byte-level) or one per byte token (Gemma)";
  EXPECT_EQ(bytes, "a\xE4\xBD");
  EXPECT_EQ(got.back().bytes, "\xE4\xBD");
}

TEST_P(StreamingBytes, AnInvalidRunBeforeTextKeepsItsBytes) {
  const TokenId a = word("a");
  const std::vector<TokenId> ids = {a, byte_id(0xC3), a, byte_id(0x32), byte_id(0x9E), a};
  std::vector<Piece> got = stream_pieces(tok(), ids);
  std::string text, bytes;
  for (const Piece& p : got) {
    text += p.text;
    bytes += p.bytes.empty() ? p.text : p.bytes;
  }
  EXPECT_EQ(text, tok().decode(ids));
  EXPECT_EQ(bytes,
            "a\xC3"
            "a2\x9E"
            "a");
}

INSTANTIATE_TEST_SUITE_P(Kinds, StreamingBytes, ::testing::Values("qwen3", "gemma3"));

// With byte fallback a run is final once it cannot be valid any more: each of its tokens is one
// U+FFFD from then on, released at once (the stray byte's token carries it, not the next text).
TEST(Streaming, AByteFallbackRunIsReleasedOnceItCannotBeValid) {
  const Tokenizer& tok = real("gemma3");
  auto id = [&](const char* t) { return *tok.token_id(t); };
  StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.push(id("<0x32>")), "") << "\"2\" may still start a run that turns invalid";
  EXPECT_EQ(stream.push(id("<0x9E>")), kFffd + kFffd);
  EXPECT_EQ(stream.bytes(), "2\x9E");
  EXPECT_EQ(stream.push(id("<0xC3>")), kFffd) << "the run stays invalid, whatever follows";
  EXPECT_EQ(stream.bytes(), "\xC3");
  EXPECT_EQ(stream.push(id("<0xA9>")), kFffd);
  EXPECT_EQ(stream.bytes(), "\xA9");
  EXPECT_EQ(stream.push(tok.encode("a").at(0)), "a");
  EXPECT_EQ(stream.bytes(), "");
  EXPECT_EQ(stream.finish(), "");
}

TEST(Streaming, DecodeRawKeepsInvalidFallbackBytes) {
  const Tokenizer& tok = real("gemma3");
  const std::vector<TokenId> ids = {*tok.token_id("<0x80>"), *tok.token_id("<0xC3>"),
                                    *tok.token_id("<0xA9>")};
  EXPECT_EQ(tok.decode(ids), kFffd + kFffd + kFffd);
  EXPECT_EQ(tok.decode_raw(ids), "\x80\xC3\xA9");
  EXPECT_EQ(tok.decode_raw(std::span(ids).first(1)), "\x80");
  EXPECT_EQ(tok.decode_bytes(std::span(ids).first(1)), kFffd);
}

// A stop string cut next to replaced bytes: the released text's bytes stay the raw ones.
TEST(Streaming, StopStringAfterAStrayByteKeepsItsBytes) {
  const Tokenizer& tok = real("gemma3");
  StreamingDetokenizer stream(tok, {"STOP"});
  std::string text, bytes;
  std::vector<TokenId> ids = {*tok.token_id("<0x80>")};
  for (TokenId id : tok.encode("x STOP y")) ids.push_back(id);
  for (TokenId id : ids) {
    std::string piece = stream.push(id);
    bytes += stream.bytes().empty() ? piece : stream.bytes();
    text += piece;
  }
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(text, kFffd + "x ");
  EXPECT_EQ(bytes, "\x80x ");
}

}  // namespace
}  // namespace recur::tokenizer
