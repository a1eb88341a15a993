// PCRE2 (UTF + UCP + JIT) regex for Split pre-tokenizers and Replace normalizers. PCRE2 stays
// inside tokenizer/; this is the only file that includes it.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/split_custom.h"
#include "util/status.h"

namespace recur::tokenizer::detail {

// Immutable after compile; find_all is thread-safe (match state is per thread).
class Regex {
 public:
  static Result<std::shared_ptr<Regex>> compile(std::string_view pattern);
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();
  // Appends [begin, end) of each non-overlapping match, left to right, as Oniguruma's find_iter
  // does (after an empty match the search resumes one character later). text is valid UTF-8.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

 private:
  Regex(void* code, CustomSplit custom) : code_(code), custom_(custom) {}
  void* code_;          // pcre2_code_8*
  CustomSplit custom_;  // a hand-written matcher for this pattern, when there is one
};

}  // namespace recur::tokenizer::detail
