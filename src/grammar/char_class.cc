#include "grammar/char_class.h"

#include <algorithm>
#include <string>

#include "util/utf8.h"

namespace recur::grammar {
namespace {

constexpr char32_t kMaxCode = 0x10FFFF;
constexpr char32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int encoded_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

char32_t max_of_length(int n) {
  return n == 1 ? 0x7F : n == 2 ? 0x7FF : n == 3 ? 0xFFFF : kMaxCode;
}

void encode(char32_t c, std::uint8_t out[4]) {
  std::string bytes;
  append_utf8(bytes, c);
  for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<std::uint8_t>(bytes[i]);
}

// [lo, hi] of one encoded length: split until every byte position spans an independent range.
// A split is needed where lo does not start, or hi does not end, a block of 64^i code points
// that share their leading bytes.
void split_same_length(char32_t lo, char32_t hi, std::vector<ByteSeq>& out) {
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, out);
        split_same_length((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, out);
        split_same_length(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::uint8_t a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  ByteSeq seq;
  for (int k = 0; k < n; ++k) seq.push_back({a[k], b[k]});
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges) {
  std::vector<CodeRange> cut;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCode);
    if (lo > hi) continue;
    if (lo < kSurrogateLo && hi > kSurrogateHi) {
      cut.push_back({lo, kSurrogateLo - 1});
      cut.push_back({kSurrogateHi + 1, hi});
    } else if (lo >= kSurrogateLo && hi <= kSurrogateHi) {
      continue;
    } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
      cut.push_back({kSurrogateHi + 1, hi});
    } else if (hi >= kSurrogateLo && hi <= kSurrogateHi) {
      cut.push_back({lo, kSurrogateLo - 1});
    } else {
      cut.push_back({lo, hi});
    }
  }
  std::sort(cut.begin(), cut.end());
  std::vector<CodeRange> merged;
  for (const auto& r : cut) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> in = normalize_ranges(ranges), out;
  char32_t next = 0;
  for (auto [lo, hi] : in) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCode) out.push_back({next, kMaxCode});
  return normalize_ranges(out);
}

std::vector<ByteSeq> utf8_sequences(const std::vector<CodeRange>& ranges) {
  std::vector<ByteSeq> out;
  for (auto [lo, hi] : normalize_ranges(ranges)) {
    while (lo <= hi) {
      const char32_t end = std::min(hi, max_of_length(encoded_length(lo)));
      split_same_length(lo, end, out);
      if (end == hi) break;
      lo = end + 1;
    }
  }
  return out;
}

}  // namespace recur::grammar
