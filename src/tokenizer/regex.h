// PCRE2 (UTF + UCP + JIT) regex for Split pre-tokenizers and Replace normalizers. PCRE2 stays
// inside tokenizer/; this is the only file that includes it.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

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
  explicit Regex(void* code) : code_(code) {}
  void* code_;  // pcre2_code_8*
};

}  // namespace recur::tokenizer::detail
