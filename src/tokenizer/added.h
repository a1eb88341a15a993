// Splitting text at added tokens (internal to tokenizer/).
#pragma once

#include <span>
#include <vector>

#include "tokenizer/model.h"

namespace recur::tokenizer::detail {

// [begin, end) of text; added >= 0: the index of the added token matched there, -1: plain text.
struct Segment {
  std::size_t begin, end;
  std::int64_t added;
};

// Splits text at the added tokens of matcher (indices into added). parse_special false: special
// tokens are not matched (they stay text), non-special ones still are.
void find_added(std::string_view text, const AddedMatcher& matcher,
                std::span<const AddedToken> added, bool parse_special, std::vector<Segment>& out);

}  // namespace recur::tokenizer::detail
