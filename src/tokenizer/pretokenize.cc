// Normalizers and pre-tokenizers with HF's split semantics (normalizer.rs: find matches, invert,
// apply the delimiter behavior, drop empty pieces). Byte-level mapping is deferred to BPE, which
// reads raw bytes, so a ByteLevel step here only adds the prefix space and applies its regex.
#include <algorithm>

#include "tokenizer/model.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer::detail {
namespace {

using Range = std::pair<std::size_t, std::size_t>;

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (text.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  std::size_t pos = 0;
  for (std::size_t hit; (hit = text.find(from, pos)) != std::string::npos;
       pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out.append(to);
  }
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

void replace_regex(std::string& text, const Regex& re, std::string_view to) {
  std::vector<Range> matches;
  re.find_all(text, matches);
  if (matches.empty()) return;
  std::string out;
  std::size_t pos = 0;
  for (auto [b, e] : matches) {
    out.append(text, pos, b - pos);
    out.append(to);
    pos = e;
  }
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

void strip(std::string& text, bool left, bool right) {
  std::size_t begin = 0, end = text.size();
  while (left && begin < end) {
    std::size_t n = 0;
    if (!is_whitespace(utf8_decode(text, begin, n))) break;
    begin += n;
  }
  while (right && end > begin) {
    std::size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    std::size_t n = 0;
    if (!is_whitespace(utf8_decode(text, start, n))) break;
    end = start;
  }
  text = text.substr(begin, end - begin);
}

// (range, is_match) covering text, from the ranges of the matches.
void cover(std::size_t n_bytes, const std::vector<Range>& matches,
           std::vector<std::pair<Range, bool>>& out) {
  out.clear();
  std::size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) out.push_back({{prev, b}, false});
    out.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != n_bytes) out.push_back({{prev, n_bytes}, false});
}

// HF's SplitDelimiterBehavior, including its quirks (two adjacent matches stay apart under
// MergedWithPrevious/Next).
void apply_behavior(SplitBehavior behavior, const std::vector<std::pair<Range, bool>>& parts,
                    std::vector<Range>& out) {
  out.clear();
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (auto& [r, m] : parts) out.push_back(r);
      break;
    case SplitBehavior::kRemoved:
      for (auto& [r, m] : parts) {
        if (!m) out.push_back(r);
      }
      break;
    case SplitBehavior::kContiguous:
      for (auto& [r, m] : parts) {
        if (m == previous_match && !out.empty())
          out.back().second = r.second;
        else
          out.push_back(r);
        previous_match = m;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (auto& [r, m] : parts) {
        if (m && !previous_match && !out.empty())
          out.back().second = r.second;
        else
          out.push_back(r);
        previous_match = m;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        auto& [r, m] = *it;
        if (m && !previous_match && !out.empty())
          out.back().first = r.first;
        else
          out.push_back(r);
        previous_match = m;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
}

void find_literal(std::string_view text, std::string_view lit, std::vector<Range>& out) {
  for (std::size_t pos = 0; (pos = text.find(lit, pos)) != std::string_view::npos;
       pos += lit.size()) {
    out.emplace_back(pos, pos + lit.size());
  }
}

template <typename Pred>
void find_chars(std::string_view text, Pred pred, std::vector<Range>& out) {
  for (std::size_t pos = 0, n = 0; pos < text.size(); pos += n) {
    if (pred(utf8_decode(text, pos, n))) out.emplace_back(pos, pos + n);
  }
}

struct Scratch {
  std::vector<Range> matches, ranges;
  std::vector<std::pair<Range, bool>> parts;
  std::vector<Piece> next;
};

// Splits every piece by the matches find(text, matches) reports.
template <typename Find>
void split_pieces(const std::string& arena, std::vector<Piece>& pieces, SplitBehavior behavior,
                  bool invert, Find find, Scratch& s) {
  s.next.clear();
  for (const Piece& p : pieces) {
    std::string_view text(arena.data() + p.offset, p.n_bytes);
    s.matches.clear();
    find(text, s.matches);
    cover(text.size(), s.matches, s.parts);
    if (invert) {
      for (auto& part : s.parts) part.second = !part.second;
    }
    apply_behavior(behavior, s.parts, s.ranges);
    for (auto [b, e] : s.ranges) {
      if (e > b) s.next.push_back({p.offset + b, e - b});
    }
  }
  pieces.swap(s.next);
}

// Rewrites a piece's text: the new text goes to the end of the arena.
void rewrite(std::string& arena, Piece& p, std::string_view prefix, std::string_view from,
             std::string_view to) {
  std::string text(prefix);
  text.append(arena, p.offset, p.n_bytes);
  if (!from.empty()) replace_all(text, from, to);
  p = {arena.size(), text.size()};
  arena += text;
}

void metaspace(const PreStep& s, std::string& arena, bool at_start, std::vector<Piece>& pieces,
               Scratch& scratch) {
  for (Piece& p : pieces) {
    bool first = at_start && p.offset == 0;
    rewrite(arena, p, "", " ", s.replacement);
    std::string_view text(arena.data() + p.offset, p.n_bytes);
    bool prepend =
        s.prepend == PreStep::Prepend::kAlways || (s.prepend == PreStep::Prepend::kFirst && first);
    if (prepend && text.substr(0, s.replacement.size()) != s.replacement) {
      rewrite(arena, p, s.replacement, "", "");
    }
  }
  if (!s.split) return;
  split_pieces(
      arena, pieces, SplitBehavior::kMergedWithNext, false,
      [&](std::string_view t, std::vector<Range>& m) { find_literal(t, s.replacement, m); },
      scratch);
}

}  // namespace

void normalize(const std::vector<NormStep>& steps, std::string& text) {
  using K = NormStep::Kind;
  for (const NormStep& s : steps) {
    switch (s.kind) {
      case K::kNfc:
        unicode_normalize(NormalForm::kNfc, text);
        break;
      case K::kNfd:
        unicode_normalize(NormalForm::kNfd, text);
        break;
      case K::kNfkc:
        unicode_normalize(NormalForm::kNfkc, text);
        break;
      case K::kNfkd:
        unicode_normalize(NormalForm::kNfkd, text);
        break;
      case K::kLowercase:
        unicode_lowercase(text);
        break;
      case K::kReplace:
        if (s.regex)
          replace_regex(text, *s.regex, s.content);
        else
          replace_all(text, s.pattern, s.content);
        break;
      case K::kPrepend:
        if (!text.empty()) text.insert(0, s.pattern);
        break;
      case K::kStrip:
        strip(text, s.left, s.right);
        break;
    }
  }
}

void pre_tokenize(const Model& model, std::string& arena, bool at_start,
                  std::vector<Piece>& pieces) {
  using K = PreStep::Kind;
  thread_local Scratch scratch;
  for (const PreStep& s : model.pre_tokenizers) {
    switch (s.kind) {
      case K::kSplit:
        if (s.regex) {
          split_pieces(
              arena, pieces, s.behavior, s.invert,
              [&](std::string_view t, std::vector<Range>& m) { s.regex->find_all(t, m); }, scratch);
        } else {
          split_pieces(
              arena, pieces, s.behavior, s.invert,
              [&](std::string_view t, std::vector<Range>& m) { find_literal(t, s.literal, m); },
              scratch);
        }
        break;
      case K::kDigits:
        split_pieces(
            arena, pieces,
            s.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false,
            [](std::string_view t, std::vector<Range>& m) { find_chars(t, is_numeric, m); },
            scratch);
        break;
      case K::kWhitespaceSplit:
        split_pieces(
            arena, pieces, SplitBehavior::kRemoved, false,
            [](std::string_view t, std::vector<Range>& m) { find_chars(t, is_whitespace, m); },
            scratch);
        break;
      case K::kMetaspace:
        metaspace(s, arena, at_start, pieces, scratch);
        break;
      case K::kByteLevel:
        if (s.add_prefix_space) {
          for (Piece& p : pieces) {
            if (arena[p.offset] != ' ') rewrite(arena, p, " ", "", "");
          }
        }
        if (s.regex) {
          split_pieces(
              arena, pieces, SplitBehavior::kIsolated, false,
              [&](std::string_view t, std::vector<Range>& m) { s.regex->find_all(t, m); }, scratch);
        }
        break;
    }
  }
}

}  // namespace recur::tokenizer::detail
