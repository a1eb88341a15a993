// Added-token matching as HF's AddedVocabulary::find_matches: leftmost-longest, non-overlapping
// matches of a byte trie, then single_word, lstrip and rstrip applied to each match.
#include "tokenizer/added.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace recur::tokenizer::detail {

void AddedMatcher::add(std::string_view content, std::uint32_t index) {
  std::uint32_t node = 0;
  for (char ch : content) {
    auto c = static_cast<unsigned char>(ch);
    auto& kids = nodes_[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, std::uint32_t{0}),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    if (it != kids.end() && it->first == c) {
      node = it->second;
      continue;
    }
    auto child = static_cast<std::uint32_t>(nodes_.size());
    kids.insert(it, {c, child});
    nodes_.emplace_back();
    node = child;
  }
  first_[static_cast<unsigned char>(content[0])] = true;
  // A duplicate content keeps the later token, as HF's map from content to token does.
  nodes_[node].token = index;
}

std::int64_t AddedMatcher::longest_at(std::string_view text, std::size_t pos,
                                      std::size_t& n_bytes) const {
  std::int64_t best = -1;
  std::uint32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    const auto& kids = nodes_[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, std::uint32_t{0}),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes_[node].token >= 0) {
      best = nodes_[node].token;
      n_bytes = i + 1 - pos;
    }
  }
  return best;
}

namespace {

char32_t last_char(std::string_view text) {
  std::size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  std::size_t n = 0;
  return utf8_decode(text, start, n);
}

bool single_word_ok(std::string_view text, std::size_t begin, std::size_t end) {
  bool start_ok = begin == 0 || !is_alphanumeric(last_char(text.substr(0, begin)));
  std::size_t n = 0;
  bool stop_ok = end == text.size() || !is_alphanumeric(utf8_decode(text, end, n));
  return start_ok && stop_ok;
}

std::size_t lstrip_begin(std::string_view text, std::size_t begin) {
  while (begin > 0) {
    std::size_t start = begin - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    std::size_t n = 0;
    if (!is_whitespace(utf8_decode(text, start, n))) break;
    begin = start;
  }
  return begin;
}

std::size_t rstrip_end(std::string_view text, std::size_t end) {
  while (end < text.size()) {
    std::size_t n = 0;
    if (!is_whitespace(utf8_decode(text, end, n))) break;
    end += n;
  }
  return end;
}

}  // namespace

void find_added(std::string_view text, const AddedMatcher& matcher,
                std::span<const AddedToken> added, bool parse_special, std::vector<Segment>& out) {
  out.clear();
  std::size_t start_offset = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t n_bytes = 0;
    std::int64_t index = matcher.can_start(static_cast<unsigned char>(text[pos]))
                             ? matcher.longest_at(text, pos, n_bytes)
                             : -1;
    if (index < 0) {
      ++pos;
      continue;
    }
    std::size_t begin = pos, end = pos + n_bytes;
    pos = end;  // a skipped match is still consumed, as the matcher's iterator does
    const AddedToken& a = added[static_cast<std::size_t>(index)];
    if (a.special && !parse_special) continue;
    if (a.single_word && !single_word_ok(text, begin, end)) continue;
    if (a.lstrip) begin = std::max(lstrip_begin(text, begin), start_offset);
    if (a.rstrip) end = rstrip_end(text, end);
    if (start_offset < begin) out.push_back({start_offset, begin, -1});
    out.push_back({begin, end, index});
    start_offset = end;
    pos = std::max(pos, end);
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace recur::tokenizer::detail
