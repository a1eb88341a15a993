// Hand-written matchers for the split regexes of the common byte-level BPE families (Qwen2/3,
// Qwen3.5, Llama 3, GPT-2/NeoX), as llama.cpp does: faster than a regex engine, and they take
// Unicode categories from ICU (Unicode 15, as the HF oracle) instead of PCRE2's Unicode 14 tables.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace recur::tokenizer::detail {

struct CustomSplit {
  enum class Kind : unsigned char { kNone, kLlama3, kGpt2 } kind = Kind::kNone;
  int max_digits = 1;  // kLlama3: \p{N} (Qwen) or \p{N}{1,3} (Llama 3)
  bool marks = false;  // kLlama3: letters include \p{M} (Qwen3.5)
};

// The hand-written matcher for pattern, or kind kNone when pattern is not one of the known ones.
CustomSplit custom_split_for(std::string_view pattern);
// Appends [begin, end) of each match, exactly as the regex would find them.
void custom_find_all(const CustomSplit& split, std::string_view text,
                     std::vector<std::pair<std::size_t, std::size_t>>& out);

}  // namespace recur::tokenizer::detail
