#include "server/marked_text.h"

#include <algorithm>

namespace recur::server {

MarkedText::MarkedText(const tokenizer::Tokenizer& tok, std::span<const std::string_view> markers)
    : tok_(&tok), shadow_(tok, {}, /*skip_special=*/true) {
  for (std::string_view m : markers) {
    if (auto id = tok.token_id(m)) ids_.emplace_back(*id, m);
  }
}

std::size_t MarkedText::marked_offset(std::size_t at, bool after) const {
  // placed_ is in text order: the marker bytes before the first marker past `at`.
  std::size_t bytes = 0;
  for (const auto& [place, upto] : placed_) {
    if (place > at || (place == at && !after)) break;
    bytes = upto;
  }
  return at + bytes;
}

std::string MarkedText::push(std::span<const engine::SampleResult> samples, std::string_view text,
                             bool done) {
  // Where each sample's text lies in the engine's text; where each marker belongs.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::size_t at = text_bytes_;
  for (const engine::SampleResult& s : samples) {
    const std::size_t index = spans_.size();
    spans_.push_back({.begin = kUnplaced, .end = kUnplaced});
    ranges.emplace_back(at, at + s.text.size());
    at += s.text.size();
    const auto marker =
        std::find_if(ids_.begin(), ids_.end(), [&](const auto& m) { return m.first == s.id; });
    // A marker that carries text is the turn's last token releasing held-back text (max_tokens,
    // an end token): that text is what matters, and nothing follows it.
    if (marker != ids_.end() && s.text.empty()) {
      queued_.push_back({.at = shadow_bytes_, .text = marker->second, .sample = index});
    } else {
      shadow_bytes_ += shadow_.push(s.id).size();
    }
  }
  // Release the text with the markers it reaches.
  std::string out;
  std::size_t from = 0;
  const std::size_t end = text_bytes_ + text.size();
  while (!queued_.empty() && queued_.front().at <= end) {
    const Marker m = queued_.front();
    queued_.pop_front();
    const std::size_t upto = std::max(m.at, text_bytes_ + from) - text_bytes_;
    out.append(text.substr(from, upto - from));
    from = upto;
    const std::size_t begin = text_bytes_ + from + marker_bytes_;
    out.append(m.text);
    marker_bytes_ += m.text.size();
    placed_.emplace_back(text_bytes_ + from, marker_bytes_);
    spans_[m.sample] = {.begin = begin, .end = begin + m.text.size()};
  }
  out.append(text.substr(from));
  text_bytes_ = end;
  // The samples' own text, with whatever markers were placed inside it.
  const std::size_t first = spans_.size() - samples.size();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (spans_[first + i].begin != kUnplaced) continue;  // a marker, placed
    const auto [b, e] = ranges[i];
    const bool marker = std::any_of(queued_.begin(), queued_.end(),
                                    [&](const Marker& m) { return m.sample == first + i; });
    if (marker) continue;
    spans_[first + i] = {.begin = marked_offset(b, true),
                         .end = b == e ? marked_offset(b, true) : marked_offset(e, false)};
  }
  if (done) {
    // A stop string ended the text before these markers: they were never written.
    const std::size_t total = text_bytes_ + marker_bytes_;
    for (const Marker& m : queued_) spans_[m.sample] = {.begin = total, .end = total};
    queued_.clear();
  }
  return out;
}

}  // namespace recur::server
