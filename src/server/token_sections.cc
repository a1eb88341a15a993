#include "server/token_sections.h"

#include <algorithm>

namespace recur::server {

std::vector<LogprobEntry> TokenSections::push(std::span<const engine::SampleResult> samples,
                                              std::string_view text, std::size_t content_bytes,
                                              bool done) {
  for (const engine::SampleResult& s : samples) {
    const engine::TokenId id = s.id;
    const std::string bytes = tok_->decode_bytes(std::span<const engine::TokenId>(&id, 1));
    tokens_.push_back(
        {.begin = token_bytes_.size(), .end = token_bytes_.size() + bytes.size(), .sample = s});
    token_bytes_ += bytes;
  }
  text_.append(text);
  if (!misaligned_ && token_bytes_.compare(0, text_.size(), text_) != 0) misaligned_ = true;
  std::vector<LogprobEntry> out;
  if (misaligned_) {
    for (; next_ < tokens_.size(); ++next_) {
      const Token& t = tokens_[next_];
      out.push_back({.bytes = token_bytes_.substr(t.begin, t.end - t.begin),
                     .logprob = t.sample.logprob,
                     .top = t.sample.top});
    }
    return out;
  }
  // The splitter releases content as soon as it sees it, so the content ends where the text
  // does, and begins content_bytes before.
  if (content_bytes > 0 && !content_seen_) {
    content_seen_ = true;
    content_begin_ = text_.size() - std::min(content_bytes, text_.size());
  }
  if (!content_seen_) return out;
  const std::size_t content_end = text_.size();
  for (; next_ < tokens_.size(); ++next_) {
    const Token& t = tokens_[next_];
    if (t.end <= content_begin_) continue;  // reasoning, tags or the newlines after them
    if (t.begin >= content_end) {
      if (done) continue;  // past the text: a stop string's tokens
      break;
    }
    if (t.end > content_end && !done) break;  // part of it still held back
    const std::size_t b = std::max(t.begin, content_begin_), e = std::min(t.end, content_end);
    out.push_back(
        {.bytes = token_bytes_.substr(b, e - b), .logprob = t.sample.logprob, .top = t.sample.top});
  }
  return out;
}

std::int64_t TokenSections::tokens_before_content() const {
  if (!content_seen_) return static_cast<std::int64_t>(tokens_.size());
  return std::count_if(tokens_.begin(), tokens_.end(),
                       [&](const Token& t) { return t.end <= content_begin_; });
}

}  // namespace recur::server
