// Character classes over code points, lowered to the byte sequences of their UTF-8 encodings so
// that the matcher only ever sees bytes.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace recur::grammar {

struct ByteRange {
  std::uint8_t lo = 0, hi = 0;
  bool operator==(const ByteRange&) const = default;
  auto operator<=>(const ByteRange&) const = default;
};
using ByteSeq = std::vector<ByteRange>;  // one range per byte of an encoding, 1 to 4

using CodeRange = std::pair<char32_t, char32_t>;  // inclusive

// Sorted, merged, clipped to [0, U+10FFFF] without the surrogates (which UTF-8 cannot encode).
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges);
// Everything in [0, U+10FFFF] (surrogates left out) that `ranges` does not hold.
std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& ranges);

// Byte-range sequences whose union is exactly the UTF-8 encodings of the code points in `ranges`
// (normalized first). Every sequence covers a rectangle: its i-th byte is any byte of the i-th
// range, independently of the others.
std::vector<ByteSeq> utf8_sequences(const std::vector<CodeRange>& ranges);

}  // namespace recur::grammar
