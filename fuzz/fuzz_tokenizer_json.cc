// libFuzzer target: tokenizer.json loading from text (optionally followed by a NUL byte and a
// tokenizer_config.json); a tokenizer that loads then encodes and decodes a short fixed string.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/check.h"

namespace {

constexpr std::string_view kSample =
    "Hello, world! <|im_start|>user\n  123 h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80 "
    "<think>x</think>";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace tk = recur::tokenizer;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view config;
  if (std::size_t nul = input.find('\0'); nul != std::string_view::npos) {
    config = input.substr(nul + 1);
    input = input.substr(0, nul);
  }
  auto tok = tk::Tokenizer::load(input, config);
  if (!tok.is_ok()) {
    RECUR_CHECK(!tok.status().message().empty());
    return 0;
  }
  for (bool parse_special : {true, false}) {
    for (bool add_special : {false, true}) {
      std::vector<tk::TokenId> ids =
          tok->encode(kSample, {.parse_special = parse_special, .add_special_tokens = add_special});
      for (tk::TokenId id : ids)
        RECUR_CHECK(id >= 0 && static_cast<std::size_t>(id) < tok->vocab_size());
      RECUR_CHECK(tk::detail::utf8_is_valid(tok->decode(ids)));
      RECUR_CHECK(tk::detail::utf8_is_valid(tok->decode(ids, /*skip_special=*/true)));
      (void)tok->decode_bytes(ids);
      tk::StreamingDetokenizer detok(*tok, {"\n"}, /*skip_special=*/true);
      for (tk::TokenId id : ids) RECUR_CHECK(tk::detail::utf8_is_valid(detok.push(id)));
      RECUR_CHECK(tk::detail::utf8_is_valid(detok.finish()));
    }
  }
  (void)tok->bos_id();
  (void)tok->eos_id();
  for (const tk::AddedToken& a : tok->added_tokens())
    RECUR_CHECK(tok->token_id(a.content).has_value());
  return 0;
}
