// Python str semantics over UTF-8 for the template engine.
#include "template/text.h"

#include <algorithm>

#include "util/utf8.h"

namespace recur::tmpl {

bool is_py_space(char32_t c) {
  if (c < 0x80) return is_ws(static_cast<char>(c));
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {
// Length of the UTF-8 sequence ending at s.back() if it decodes to a space, else 0.
std::size_t trailing_space_len(std::string_view s) {
  if (is_ws(s.back())) return 1;
  if (!(s.back() & 0x80)) return 0;
  std::size_t start = s.size() - 1;
  while (start > 0 && s.size() - start < 4 && (s[start] & 0xC0) == 0x80) --start;
  std::vector<char32_t> cps = decode_utf8(s.substr(start));
  return cps.size() == 1 && is_py_space(cps[0]) ? s.size() - start : 0;
}
std::size_t leading_space_len(std::string_view s) {
  if (is_ws(s.front())) return 1;
  if (!(s.front() & 0x80)) return 0;
  auto c = static_cast<unsigned char>(s.front());
  std::size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (len > s.size()) return 0;
  std::vector<char32_t> cps = decode_utf8(s.substr(0, len));
  return cps.size() == 1 && is_py_space(cps[0]) ? len : 0;
}
}  // namespace

std::string_view rstrip_ws(std::string_view s) {
  while (!s.empty()) {
    std::size_t n = trailing_space_len(s);
    if (n == 0) break;
    s.remove_suffix(n);
  }
  return s;
}
std::string_view lstrip_ws(std::string_view s) {
  while (!s.empty()) {
    std::size_t n = leading_space_len(s);
    if (n == 0) break;
    s.remove_prefix(n);
  }
  return s;
}

std::vector<char32_t> decode_utf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(0xDC00 + c);  // lone byte: Python's surrogateescape-like marker
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_text_code_point(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out += static_cast<char>(cp - 0xDC00);  // a lone byte decode_utf8 kept (surrogateescape)
  } else {
    append_utf8(out, cp);
  }
}

std::string encode_utf8(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) append_text_code_point(out, cps[i]);
  return out;
}

std::size_t count_code_points(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<std::string> unescape_python(std::string_view body) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n':
        out += '\n';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'r':
        out += '\r';
        continue;
      case '\\':
        out += '\\';
        continue;
      case '\'':
        out += '\'';
        continue;
      case '"':
        out += '"';
        continue;
      case 'a':
        out += '\a';
        continue;
      case 'b':
        out += '\b';
        continue;
      case 'f':
        out += '\f';
        continue;
      case 'v':
        out += '\v';
        continue;
      case '\n':
        continue;
      default:
        break;
    }
    int n_hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (n_hex > 0) {
      char32_t cp = 0;
      for (int k = 0; k < n_hex; ++k) {
        int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
        if (h < 0) {
          return Error(StatusCode::kInvalidArgument, "truncated \\{} escape in string literal", e);
        }
        cp = cp * 16 + static_cast<char32_t>(h);
      }
      i += n_hex;
      append_text_code_point(out, cp);
    } else if (e >= '0' && e <= '7') {
      char32_t cp = 0;
      std::size_t k = 0;
      for (; k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7'; ++k) {
        cp = cp * 8 + static_cast<char32_t>(body[i + k] - '0');
      }
      i += k - 1;
      append_text_code_point(out, cp);
    } else {
      out += '\\';
      out += e;
    }
  }
  return out;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  if (!chars) {
    if (left) s = lstrip_ws(s);
    if (right) s = rstrip_ws(s);
    return std::string(s);
  }
  std::vector<char32_t> cps = decode_utf8(s);
  std::vector<char32_t> set = decode_utf8(*chars);
  auto in_set = [&](char32_t c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  std::size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && in_set(cps[b])) ++b;
  }
  if (right) {
    while (e > b && in_set(cps[e - 1])) --e;
  }
  return encode_utf8(cps, b, e);
}

char32_t upper_cp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    bool odd_is_lower = !((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E));
    if (odd_is_lower ? (c & 1) : !(c & 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t lower_cp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    bool odd_is_lower = !((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E));
    if (odd_is_lower ? !(c & 1) : (c & 1)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

namespace {
std::string map_case(std::string_view s, char32_t (*f)(char32_t)) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode_utf8(s)) append_text_code_point(out, f(c));
  return out;
}
}  // namespace

std::string py_upper(std::string_view s) { return map_case(s, upper_cp); }
std::string py_lower(std::string_view s) { return map_case(s, lower_cp); }

}  // namespace recur::tmpl
