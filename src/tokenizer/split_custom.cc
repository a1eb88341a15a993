// The alternatives of the Llama 3 / Qwen regex, tried in order at each position:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,k} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// and of GPT-2's: 's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
#include "tokenizer/split_custom.h"

#include <unicode/uchar.h>

#include <cstdint>

#include "tokenizer/unicode.h"

namespace recur::tokenizer::detail {
namespace {

constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum : std::uint8_t { kLetter = 1, kNumber = 2, kMark = 4, kSpace = 8, kNewline = 16 };

struct Char {
  char32_t cp;
  std::size_t offset;  // byte offset in the text
  std::uint8_t cls;
};

std::uint8_t classify(char32_t cp) {
  std::uint32_t gc = U_GET_GC_MASK(static_cast<UChar32>(cp));
  std::uint8_t cls = 0;
  if (gc & U_GC_L_MASK) cls |= kLetter;
  if (gc & U_GC_N_MASK) cls |= kNumber;
  if (gc & U_GC_M_MASK) cls |= kMark;
  if (is_whitespace(cp)) cls |= kSpace;
  if (cp == '\r' || cp == '\n') cls |= kNewline;
  return cls;
}

std::uint8_t classify_cached(char32_t cp) {
  static const auto ascii = [] {
    std::array<std::uint8_t, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = classify(c);
    return t;
  }();
  return cp < 128 ? ascii[cp] : classify(cp);
}

class Matcher {
 public:
  Matcher(const CustomSplit& split, const std::vector<Char>& chars)
      : s_(split), c_(chars), n_(chars.size() - 1) {}  // c_[n_] is a sentinel

  std::size_t match_at(std::size_t i) const {
    if (std::size_t len = contraction(i)) return i + len;
    return s_.kind == CustomSplit::Kind::kGpt2 ? gpt2_rest(i) : llama3_rest(i);
  }

 private:
  bool has(std::size_t i, std::uint8_t cls) const { return i < n_ && (c_[i].cls & cls); }
  bool letter(std::size_t i) const { return has(i, s_.marks ? kLetter | kMark : kLetter); }
  bool other(std::size_t i) const {
    return i < n_ && !has(i, kSpace | kLetter | kNumber | (s_.marks ? kMark : 0));
  }
  char32_t lower(std::size_t i) const {
    if (i >= n_) return 0;
    char32_t cp = c_[i].cp;
    if (s_.kind == CustomSplit::Kind::kGpt2) return cp;  // GPT-2's contractions are case-sensitive
    if (cp == 0x17F) return 's';                         // long s folds to s under (?i)
    return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  }
  std::size_t contraction(std::size_t i) const {
    if (c_[i].cp != '\'') return 0;
    char32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }
  std::size_t run(std::size_t i, std::uint8_t cls) const {
    while (has(i, cls)) ++i;
    return i;
  }
  std::size_t letters(std::size_t i) const {
    while (letter(i)) ++i;
    return i;
  }
  std::size_t others(std::size_t i) const {
    while (other(i)) ++i;
    return i;
  }
  std::size_t whitespace(std::size_t i) const {
    std::size_t end = run(i, kSpace);
    if (end == n_ || end - i < 2) return end;  // \s+(?!\S) at the end of text, or \s+
    return end - 1;                            // \s+(?!\S) leaves one space for the next word
  }
  std::size_t llama3_rest(std::size_t i) const {
    if (letter(i)) return letters(i);
    if (!has(i, kNewline | kLetter | kNumber) && letter(i + 1)) return letters(i + 1);
    if (has(i, kNumber)) {
      std::size_t end = i;
      while (end - i < static_cast<std::size_t>(s_.max_digits) && has(end, kNumber)) ++end;
      return end;
    }
    std::size_t j = c_[i].cp == ' ' && other(i + 1) ? i + 1 : i;
    if (other(j)) return run(others(j), kNewline);
    std::size_t end = run(i, kSpace), last_newline = 0;
    for (std::size_t k = i; k < end; ++k) {
      if (has(k, kNewline)) last_newline = k + 1;
    }
    if (last_newline) return last_newline;  // \s*[\r\n]+
    return whitespace(i);
  }
  std::size_t gpt2_rest(std::size_t i) const {
    std::size_t j = c_[i].cp == ' ' ? i + 1 : i;
    if (letter(j)) return letters(j);
    if (has(j, kNumber)) return run(j, kNumber);
    if (other(j)) return others(j);
    return whitespace(i);
  }

  const CustomSplit& s_;
  const std::vector<Char>& c_;
  std::size_t n_;
};

}  // namespace

CustomSplit custom_split_for(std::string_view pattern) {
  if (pattern == kQwen2) return {CustomSplit::Kind::kLlama3, 1, false};
  if (pattern == kLlama3) return {CustomSplit::Kind::kLlama3, 3, false};
  if (pattern == kQwen35) return {CustomSplit::Kind::kLlama3, 1, true};
  if (pattern == kGpt2) return {CustomSplit::Kind::kGpt2, 0, false};
  return {};
}

void custom_find_all(const CustomSplit& split, std::string_view text,
                     std::vector<std::pair<std::size_t, std::size_t>>& out) {
  thread_local std::vector<Char> chars;
  chars.clear();
  for (std::size_t pos = 0, n = 0; pos < text.size(); pos += n) {
    char32_t cp = utf8_decode(text, pos, n);
    chars.push_back({cp, pos, classify_cached(cp)});
  }
  chars.push_back({0, text.size(), 0});
  Matcher m(split, chars);
  for (std::size_t i = 0; i + 1 < chars.size();) {
    std::size_t end = m.match_at(i);
    if (end <= i) end = i + 1;  // cannot happen: every character starts some alternative
    out.emplace_back(chars[i].offset, chars[end].offset);
    i = end;
  }
}

}  // namespace recur::tokenizer::detail
