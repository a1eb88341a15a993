// Loads tokenizer.json without building a JSON tree for its two big parts: model.vocab and
// model.merges (hundreds of thousands of entries) stream straight into vectors; the rest becomes
// an ordinary nlohmann::json. This is what keeps loading a 150k-token tokenizer fast.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/json_util.h"

namespace recur::tokenizer::detail {

struct TokenizerJson {
  Json dom;  // everything except model.vocab and model.merges
  bool has_vocab = false;
  std::vector<std::pair<std::string, std::int64_t>> vocab;
  bool has_merges = false;
  // ["a", "b"] pairs; the legacy "a b" form is kept whole in [0] with [1] empty and legacy set.
  std::vector<std::array<std::string, 2>> merges;
  std::vector<bool> legacy;
};

Result<TokenizerJson> parse_tokenizer_file(std::string_view text);

}  // namespace recur::tokenizer::detail
