#include "server/token_sections.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace recur::server {

std::vector<LogprobEntry> TokenSections::push(std::span<const engine::SampleResult> samples,
                                              std::string_view text, std::size_t content_bytes) {
  for (const engine::SampleResult& s : samples) {
    const std::size_t begin = tokens_.empty() ? 0 : tokens_.back().end;
    tokens_.push_back({.begin = begin,
                       .end = begin + s.text.size(),
                       .raw = s.bytes,
                       .logprob = s.logprob,
                       .top = s.top});
  }
  text_.append(text);
  std::vector<LogprobEntry> out;
  // The splitter releases content as soon as it sees it, so the content ends where the text
  // does, and begins content_bytes before.
  if (content_bytes > 0 && !content_seen_) {
    content_seen_ = true;
    content_begin_ = text_.size() - std::min(content_bytes, text_.size());
  }
  if (!content_seen_) return out;
  for (; next_ < tokens_.size(); ++next_) {
    const Token& t = tokens_[next_];
    // A token without text (inside a character, a stop string, a special token) is an entry
    // where it lies inside the content.
    const bool inside =
        t.begin == t.end ? t.begin > content_begin_ || content_begin_ == 0 : t.end > content_begin_;
    if (!inside) continue;
    const std::size_t b = std::max(t.begin, content_begin_);
    std::string piece = text_.substr(b, t.end - b);
    // A U+FFFD the decoder made of invalid bytes reports those bytes.
    std::string bytes =
        t.raw.empty()
            ? piece
            : t.raw.substr(tokenizer::detail::raw_offset(
                  std::string_view(text_).substr(t.begin, t.end - t.begin), t.raw, b - t.begin));
    out.push_back(
        {.text = std::move(piece), .bytes = std::move(bytes), .logprob = t.logprob, .top = t.top});
  }
  return out;
}

std::int64_t TokenSections::tokens_before_content() const {
  if (!content_seen_) return static_cast<std::int64_t>(tokens_.size());
  return std::count_if(tokens_.begin(), tokens_.end(),
                       [&](const Token& t) { return t.end <= content_begin_; });
}

std::vector<LogprobEntry> TokenSections::push_marked(std::span<const engine::SampleResult> samples,
                                                     std::span<const chat::TextSpan> spans,
                                                     std::string_view marked_text,
                                                     std::span<const chat::TextSpan> content,
                                                     std::size_t settled) {
  for (const engine::SampleResult& s : samples) {
    tokens_.push_back({.raw = s.bytes, .logprob = s.logprob, .top = s.top});
  }
  text_.append(marked_text);
  std::vector<LogprobEntry> out;
  for (; next_ < tokens_.size() && next_ < spans.size(); ++next_) {
    const chat::TextSpan span = spans[next_];
    // Not placed yet (a marker the text has not reached), or not classified yet.
    if (span.begin > text_.size() || span.end > settled) break;
    const Token& t = tokens_[next_];
    std::string bytes;
    bool inside = false;
    for (const chat::TextSpan& c : content) {
      if (span.begin == span.end) {
        inside = inside || (c.begin < span.begin && span.begin < c.end);
        continue;
      }
      const std::size_t b = std::max(span.begin, c.begin), e = std::min(span.end, c.end);
      if (b < e) bytes.append(text_, b, e - b);
    }
    if (bytes.empty() && !inside) continue;
    // A token wholly inside the content whose U+FFFD the decoder made reports the raw bytes.
    std::string raw = !t.raw.empty() && bytes.size() == span.end - span.begin ? t.raw : bytes;
    out.push_back(
        {.text = std::move(bytes), .bytes = std::move(raw), .logprob = t.logprob, .top = t.top});
  }
  return out;
}

std::int64_t TokenSections::tokens_within(std::span<const chat::TextSpan> spans,
                                          std::span<const chat::TextSpan> within) {
  return std::count_if(spans.begin(), spans.end(), [&](const chat::TextSpan& s) {
    return std::any_of(within.begin(), within.end(), [&](const chat::TextSpan& w) {
      return w.begin <= s.begin && s.end <= w.end && s.begin <= s.end;
    });
  });
}

}  // namespace recur::server
