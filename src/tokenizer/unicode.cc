// UTF-8 decoding and repair, Unicode properties (ICU), normalization (ICU Normalizer2 on UTF-8),
// and GPT-2's byte-to-character table.
#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/ucasemap.h>
#include <unicode/uchar.h>

#include <algorithm>

namespace recur::tokenizer::detail {
namespace {

// Unicode "maximal subpart" rule: length of the valid prefix of a sequence at bytes[pos], and
// whether it is a complete character. bytes[pos] is not ASCII.
struct SeqCheck {
  std::size_t n_valid;  // bytes that form a valid (maybe incomplete) prefix; 0: invalid lead
  bool complete;
};

SeqCheck check_sequence(std::string_view bytes, std::size_t pos) {
  auto b0 = static_cast<unsigned char>(bytes[pos]);
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0, false};
  }
  std::size_t n = 1;
  for (; n < need; ++n) {
    if (pos + n >= bytes.size()) return {n, false};
    auto b = static_cast<unsigned char>(bytes[pos + n]);
    unsigned char l = n == 1 ? lo : 0x80, h = n == 1 ? hi : 0xBF;
    if (b < l || b > h) return {n, false};
  }
  return {need, true};
}

std::array<char32_t, 256> make_byte_chars() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

const icu::Normalizer2* normalizer(NormalForm form) {
  UErrorCode err = U_ZERO_ERROR;
  switch (form) {
    case NormalForm::kNfc:
      return icu::Normalizer2::getNFCInstance(err);
    case NormalForm::kNfd:
      return icu::Normalizer2::getNFDInstance(err);
    case NormalForm::kNfkc:
      return icu::Normalizer2::getNFKCInstance(err);
    case NormalForm::kNfkd:
      return icu::Normalizer2::getNFKDInstance(err);
  }
  return nullptr;
}

}  // namespace

char32_t utf8_decode(std::string_view text, std::size_t pos, std::size_t& n_bytes) {
  auto b0 = static_cast<unsigned char>(text[pos]);
  n_bytes = utf8_lead_len(b0);
  if (pos + n_bytes > text.size()) {
    n_bytes = 1;
    return 0xFFFD;
  }
  if (n_bytes == 1) return b0;
  char32_t cp = b0 & (0x7F >> n_bytes);
  for (std::size_t i = 1; i < n_bytes; ++i) cp = (cp << 6) | (text[pos + i] & 0x3F);
  return cp;
}

bool utf8_is_valid(std::string_view bytes) {
  for (std::size_t pos = 0; pos < bytes.size();) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    SeqCheck c = check_sequence(bytes, pos);
    if (!c.complete) return false;
    pos += c.n_valid;
  }
  return true;
}

std::string utf8_repair(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      out += bytes[pos++];
      continue;
    }
    SeqCheck c = check_sequence(bytes, pos);
    if (c.complete) {
      out.append(bytes.substr(pos, c.n_valid));
    } else {
      out += "\xEF\xBF\xBD";
    }
    pos += c.n_valid == 0 ? 1 : c.n_valid;
  }
  return out;
}

std::size_t utf8_incomplete_tail(std::string_view bytes) {
  // A character is at most 4 bytes: only the last 3 can start an unfinished one.
  std::size_t begin = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (std::size_t pos = begin; pos < bytes.size(); ++pos) {
    auto b = static_cast<unsigned char>(bytes[pos]);
    if (b < 0xC2 || b > 0xF4) continue;
    SeqCheck c = check_sequence(bytes, pos);
    if (!c.complete && pos + c.n_valid == bytes.size()) return c.n_valid;
  }
  return 0;
}

std::size_t raw_offset(std::string_view text, std::string_view raw, std::size_t p) {
  const std::size_t n = std::min(text.size(), raw.size());
  std::size_t head = 0;
  while (head < n && text[head] == raw[head]) ++head;
  if (p <= head) return p;
  std::size_t tail = 0;
  while (tail < n - head && text[text.size() - 1 - tail] == raw[raw.size() - 1 - tail]) ++tail;
  return raw.size() - std::min(tail, text.size() - p);
}

bool is_whitespace(char32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

bool is_numeric(char32_t cp) {
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}

bool is_alphanumeric(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_ALPHABETIC) || is_numeric(cp);
}

void unicode_normalize(NormalForm form, std::string& text) {
  // Below U+0300 every character is already NFC and NFD (and the compatibility forms only
  // differ above U+009F): the common ASCII case costs one scan.
  bool fast = true;
  unsigned char limit = (form == NormalForm::kNfc || form == NormalForm::kNfd) ? 0xCC : 0xC2;
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) >= limit) {
      fast = false;
      break;
    }
  }
  if (fast) return;
  const icu::Normalizer2* norm = normalizer(form);
  UErrorCode err = U_ZERO_ERROR;
  icu::StringPiece piece(text.data(), static_cast<std::int32_t>(text.size()));
  if (norm == nullptr || norm->isNormalizedUTF8(piece, err) || U_FAILURE(err)) return;
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  icu::StringByteSink<std::string> sink(&out);
  err = U_ZERO_ERROR;
  norm->normalizeUTF8(0, piece, sink, nullptr, err);
  if (U_SUCCESS(err)) text = std::move(out);
}

// HF lowercases character by character (Rust char::to_lowercase: full mappings, no context), so
// a word-final capital sigma becomes σ, never ς: each character is mapped on its own.
void unicode_lowercase(std::string& text) {
  UErrorCode err = U_ZERO_ERROR;
  UCaseMap* map = ucasemap_open("", 0, &err);
  if (U_FAILURE(err)) return;
  std::string out;
  out.reserve(text.size());
  char buf[32];
  for (std::size_t pos = 0, n = 0; pos < text.size(); pos += n) {
    n = utf8_lead_len(static_cast<unsigned char>(text[pos]));
    if (n == 1) {
      char c = text[pos];
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
      continue;
    }
    err = U_ZERO_ERROR;
    std::int32_t len = ucasemap_utf8ToLower(map, buf, sizeof(buf), text.data() + pos,
                                            static_cast<std::int32_t>(n), &err);
    if (U_SUCCESS(err) && len > 0 && static_cast<std::size_t>(len) <= sizeof(buf)) {
      out.append(buf, static_cast<std::size_t>(len));
    } else {
      out.append(text, pos, n);
    }
  }
  ucasemap_close(map);
  text = std::move(out);
}

const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> table = make_byte_chars();
  return table;
}

int char_byte(char32_t cp) {
  // 256 bytes, 188 of them printable: the other 68 map to U+0100..U+0143 in byte order.
  static const std::array<std::int16_t, 256 + 68> inverse = [] {
    std::array<std::int16_t, 256 + 68> inv{};
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[byte_chars()[b]] = static_cast<std::int16_t>(b);
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

}  // namespace recur::tokenizer::detail
