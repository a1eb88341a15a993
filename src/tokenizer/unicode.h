// UTF-8 helpers and the Unicode properties the HF pipeline relies on (Rust char semantics), plus
// ICU normalization. ICU stays inside tokenizer/; this is the only header that wraps it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace recur::tokenizer::detail {

// Decodes the character at text[pos] (text is valid UTF-8); sets n_bytes to its length.
char32_t utf8_decode(std::string_view text, std::size_t pos, std::size_t& n_bytes);
inline std::size_t utf8_lead_len(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

bool utf8_is_valid(std::string_view bytes);
// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string utf8_repair(std::string_view bytes);
// Length of a valid but unfinished character at the end of bytes (0 when the end is complete).
std::size_t utf8_incomplete_tail(std::string_view bytes);
// text is raw with invalid UTF-8 replaced by U+FFFD (by a decoder); returns where text's offset p
// (a character boundary) falls in raw: the same offset inside their common start, counted from
// the end inside their common end, else where their common end starts.
std::size_t raw_offset(std::string_view text, std::string_view raw, std::size_t p);

// Rust char::is_whitespace (White_Space), is_alphanumeric, is_numeric (general category N).
bool is_whitespace(char32_t cp);
bool is_alphanumeric(char32_t cp);
bool is_numeric(char32_t cp);

enum class NormalForm : std::uint8_t { kNfc, kNfd, kNfkc, kNfkd };
// Normalizes text in place (valid UTF-8); leaves it untouched when it is already normal.
void unicode_normalize(NormalForm form, std::string& text);
void unicode_lowercase(std::string& text);

// GPT-2's bytes_to_unicode: byte b stands for the character byte_char(b) in byte-level
// vocabularies.
const std::array<char32_t, 256>& byte_chars();
// Inverse: the byte a character stands for, or -1.
int char_byte(char32_t cp);

}  // namespace recur::tokenizer::detail
