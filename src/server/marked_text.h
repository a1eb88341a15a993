// A turn's generated text with the special tokens of its reply format spelled out where the model
// sampled them: what HarmonyParser (chat/harmony.h) reads. The engine decodes with skip_special
// (clients never see special tokens), so its text lacks harmony's markers; they are put back here
// from the sampled ids at exactly their place in the text: a second detokenizer without stop
// strings says how much text came before each, and a marker is released once the engine's text
// (which may still hold text back as a possible stop string) has reached it. A marker a stop string
// cut off is never released. Also each sample's span in the marked text, for lining logprobs up
// with the content (TokenSections). Not shown to clients. Thread-compatible: one per turn.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/harmony.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {

class MarkedText {
 public:
  // Borrows the tokenizer. markers: the special tokens to spell out (those the vocabulary lacks
  // are left out).
  MarkedText(const tokenizer::Tokenizer& tok, std::span<const std::string_view> markers);

  // One engine event: its samples and text. Returns the marked text it releases. done: the turn's
  // last event; markers its text never reached are dropped.
  std::string push(std::span<const engine::SampleResult> samples, std::string_view text, bool done);
  // Each sample's span in the marked text so far, in order: a marker's is the marker. A span whose
  // begin is kUnplaced belongs to a marker the text has not reached yet.
  const std::vector<chat::TextSpan>& spans() const { return spans_; }
  static constexpr std::size_t kUnplaced = static_cast<std::size_t>(-1);

 private:
  struct Marker {
    std::size_t at = 0;  // its place in the engine's text (a byte offset)
    std::string_view text;
    std::size_t sample = 0;
  };
  // The marked offset of engine text offset `at`, after (`after`) or before the markers there.
  std::size_t marked_offset(std::size_t at, bool after) const;

  const tokenizer::Tokenizer* tok_;
  tokenizer::StreamingDetokenizer shadow_;  // the engine's decoding, without stop strings
  std::vector<std::pair<tokenizer::TokenId, std::string_view>> ids_;  // marker id -> text
  std::size_t shadow_bytes_ = 0;  // text the shadow has released
  std::size_t text_bytes_ = 0;    // engine text seen
  std::deque<Marker> queued_;     // markers the engine's text has not reached
  // Markers released: their engine text offset and the marker bytes released up to them.
  std::vector<std::pair<std::size_t, std::size_t>> placed_;
  std::size_t marker_bytes_ = 0;
  std::vector<chat::TextSpan> spans_;
};

}  // namespace recur::server
