// PCRE2 wrapper: compile once with JIT, match with per-thread match data and JIT stack.
#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace recur::tokenizer::detail {
namespace {

// Per-thread scratch: match data for one ovector pair and a JIT stack that grows to 8 MiB, so a
// long run of whitespace against `\s+(?!\S)` cannot exhaust the default 32 KiB stack.
struct ThreadScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  ThreadScratch() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
};

ThreadScratch& scratch() {
  thread_local ThreadScratch s;
  return s;
}

std::size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// The HF tokenizers match with Oniguruma, whose \s is the White_Space property; PCRE2's UCP \s
// also takes U+180E. Spelling the property out makes the two agree.
std::string onig_compatible(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char next = pattern[++i];
    if (next == 's') {
      out += "\\p{White_Space}";
    } else if (next == 'S') {
      out += "\\P{White_Space}";
    } else {
      out += '\\';
      out += next;
    }
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<Regex>> Regex::compile(std::string_view original) {
  std::string rewritten = onig_compatible(original);
  std::string_view pattern = rewritten;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(error, buf, sizeof(buf));
    return Error(StatusCode::kInvalidArgument, "regex /{}/ at offset {}: {}", original, offset,
                 reinterpret_cast<const char*>(buf));
  }
  // JIT is an optimization: when it is unavailable the interpreter gives the same matches.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::shared_ptr<Regex>(new Regex(code, custom_split_for(original)));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text,
                     std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  if (custom_.kind != CustomSplit::Kind::kNone) {
    custom_find_all(custom_, text, out);
    return;
  }
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadScratch& s = scratch();
  auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, s.data, s.context);
    if (rc < 0) {
      if (rc == PCRE2_ERROR_NOMATCH) return;
      // A resource limit: retry this position without JIT rather than lose the rest of the text.
      rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, s.data,
                       nullptr);
      if (rc < 0) return;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    std::size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      pos = end;
    } else {
      if (begin >= text.size()) return;
      pos = begin + utf8_len(static_cast<unsigned char>(text[begin]));
    }
  }
}

}  // namespace recur::tokenizer::detail
