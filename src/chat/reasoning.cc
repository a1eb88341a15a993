#include "chat/reasoning.h"

#include <algorithm>

namespace recur::chat {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of s that is a proper prefix of tag.
std::size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (std::size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

std::size_t trailing_newlines(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && s[s.size() - 1 - n] == '\n') ++n;
  return n;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool starts_in_reasoning)
    : mode_(starts_in_reasoning ? Mode::kReasoning : Mode::kStart),
      saw_reasoning_(starts_in_reasoning) {}

SplitText ReasoningSplitter::push(std::string_view text) {
  pending_.append(text);
  return drain(false);
}

SplitText ReasoningSplitter::finish() { return drain(true); }

SplitText ReasoningSplitter::drain(bool final) {
  SplitText out;
  for (;;) {
    if (at_section_start_) {
      std::size_t nl = 0;
      while (nl < pending_.size() && pending_[nl] == '\n') ++nl;
      pending_.erase(0, nl);
      if (pending_.empty()) return out;
    }
    if (mode_ == Mode::kStart) {
      // The model may open its own <think> block (templates that do not open it).
      if (pending_.size() < kOpen.size() && kOpen.substr(0, pending_.size()) == pending_ &&
          !final) {
        return out;
      }
      if (pending_.compare(0, kOpen.size(), kOpen) == 0) {
        pending_.erase(0, kOpen.size());
        mode_ = Mode::kReasoning;
        saw_reasoning_ = true;
        at_section_start_ = true;
        continue;
      }
      mode_ = Mode::kContent;
      continue;
    }
    if (mode_ == Mode::kReasoning) {
      std::size_t close = pending_.find(kClose);
      if (close != std::string::npos) {
        std::string_view body(pending_.data(), close);
        body.remove_suffix(trailing_newlines(body));
        out.reasoning.append(body);
        pending_.erase(0, close + kClose.size());
        mode_ = Mode::kContent;
        at_section_start_ = true;
        continue;
      }
      std::size_t keep = final ? 0 : partial_tag_suffix(pending_, kClose);
      std::string_view ready(pending_.data(), pending_.size() - keep);
      std::size_t nl = trailing_newlines(ready);  // may pad a coming </think>
      if (!final) keep += nl;
      std::size_t n_out = pending_.size() - keep;
      if (final) n_out -= std::min(n_out, nl);  // an unclosed block: trim like the template
      out.reasoning.append(pending_, 0, n_out);
      if (n_out > 0) at_section_start_ = false;
      pending_.erase(0, final ? pending_.size() : n_out);
      return out;
    }
    // Content: everything goes out as it comes.
    out.content.append(pending_);
    if (!pending_.empty()) at_section_start_ = false;
    pending_.clear();
    return out;
  }
}

}  // namespace recur::chat
