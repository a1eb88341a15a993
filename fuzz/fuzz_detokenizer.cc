// libFuzzer target: the streaming detokenizer and its stop strings (what the engine runs for every
// generated token), over the generated tokenizer. The pieces pushed out must concatenate to the
// text a full decode gives, cut where the generation would have stopped.
//
// Input: byte 0 = flags (bit 0: skip special tokens; bits 1-2: number of stop strings; bit 3: the
// SentencePiece-style byte-fallback tokenizer instead of the byte-level one), then each stop
// string as a length byte and its bytes, then token ids as 2-byte little-endian values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generated_tokenizer.h"
#include "sentencepiece_tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

namespace tk = recur::tokenizer;

struct Input {
  bool skip_special = false;
  std::vector<std::string> stops;
  std::vector<tk::TokenId> ids;
};

std::optional<Input> split_input(std::string_view in, std::size_t vocab_size) {
  if (in.empty()) return std::nullopt;
  Input out;
  out.skip_special = (in[0] & 1) != 0;
  std::size_t n_stops = (static_cast<unsigned char>(in[0]) >> 1) & 3;
  in.remove_prefix(1);
  for (std::size_t i = 0; i < n_stops; ++i) {
    if (in.empty()) return std::nullopt;
    std::size_t len = static_cast<unsigned char>(in[0]);
    if (in.size() < 1 + len) return std::nullopt;
    out.stops.emplace_back(in.substr(1, len));
    in.remove_prefix(1 + len);
  }
  // A few ids beyond the vocabulary and below zero too: decode skips them.
  const std::size_t span = vocab_size + 16;
  for (std::size_t i = 0; i + 1 < in.size(); i += 2) {
    std::size_t v = static_cast<unsigned char>(in[i]) | static_cast<unsigned char>(in[i + 1]) << 8;
    out.ids.push_back(static_cast<tk::TokenId>(v % span) - 8);
  }
  return out;
}

// Where the text is cut: the earliest stop string in `text`, if any.
std::optional<std::size_t> first_stop(std::string_view text,
                                      const std::vector<std::string>& stops) {
  std::optional<std::size_t> best;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    std::size_t pos = text.find(s);
    if (pos != std::string_view::npos && (!best || pos < *best)) best = pos;
  }
  return best;
}

// The non-streamed reference: after each token the whole text so far is decoded; generation stops
// at the first token after which a stop string appears (a character still unfinished at the end
// of the bytes, or a byte-fallback run, is not text yet); at the end the full decode.
std::string expected_text(const tk::Tokenizer& tok, const Input& in, bool& stopped) {
  stopped = false;
  std::span<const tk::TokenId> all(in.ids);
  bool in_byte_run = false;
  for (std::size_t n = 1; n <= all.size(); ++n) {
    // A run of byte-fallback tokens is not text yet: a later invalid byte turns all of it into
    // U+FFFD. Unknown ids and skipped specials do not end a run (the decoder never sees them).
    std::string_view last = tok.token_text(all[n - 1]);
    if (!last.empty() && !(in.skip_special && tok.is_special(all[n - 1]))) {
      in_byte_run = last.size() == 6 && last.substr(0, 3) == "<0x" && last[5] == '>';
    }
    if (in_byte_run) continue;
    std::string bytes = tok.decode_bytes(all.first(n), in.skip_special);
    if (tk::detail::utf8_incomplete_tail(bytes) > 0) continue;
    std::string text = tk::detail::utf8_repair(bytes);
    if (auto pos = first_stop(text, in.stops)) {
      stopped = true;
      return text.substr(0, *pos);
    }
  }
  std::string text = tok.decode(all, in.skip_special);
  if (auto pos = first_stop(text, in.stops)) {
    stopped = true;
    return text.substr(0, *pos);
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool sentencepiece = size > 0 && (data[0] & 8) != 0;
  const tk::Tokenizer& tok =
      sentencepiece ? recur::fuzz::sentencepiece_tokenizer() : recur::fuzz::generated_tokenizer();
  auto in =
      split_input(std::string_view(reinterpret_cast<const char*>(data), size), tok.vocab_size());
  if (!in || in->ids.size() > 512) return 0;
  // Stop strings come from JSON request bodies, so they are valid UTF-8 (and then never match
  // inside a character).
  for (const std::string& s : in->stops) {
    if (!tk::detail::utf8_is_valid(s)) return 0;
  }
  tk::StreamingDetokenizer detok(tok, in->stops, in->skip_special);
  std::string streamed;
  for (tk::TokenId id : in->ids) {
    std::string piece = detok.push(id);
    RECUR_CHECK(tk::detail::utf8_is_valid(piece));
    streamed += piece;
  }
  streamed += detok.finish();
  RECUR_CHECK(detok.finish().empty());
  RECUR_CHECK(detok.push(0).empty());
  bool stopped = false;
  std::string expected = expected_text(tok, *in, stopped);
  RECUR_CHECK(detok.stopped() == stopped);
  RECUR_CHECK(streamed == expected);
  return 0;
}
