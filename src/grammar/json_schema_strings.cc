// String pieces of the JSON Schema compiler: GBNF literals and classes, code point sets written as
// JSON string characters, "pattern" (an ECMA-262 regex subset) and "format".
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema_internal.h"
#include "util/utf8.h"

namespace recur::grammar::schema_detail {
namespace {

const CodepointSet kSurrogates = CodepointSet::of(0xD800, 0xDFFF);

// One code point inside a GBNF class: plain when printable ASCII without a meaning there.
std::string class_char(char32_t c) {
  if (c >= 0x20 && c < 0x7F &&
      std::string_view("[]\\-^\"").find(static_cast<char>(c)) == std::string_view::npos) {
    return std::string(1, static_cast<char>(c));
  }
  if (c < 0x80) return fmt::format("\\x{:02x}", static_cast<unsigned>(c));
  if (c < 0x10000) return fmt::format("\\u{:04x}", static_cast<unsigned>(c));
  return fmt::format("\\U{:08x}", static_cast<unsigned>(c));
}

std::string class_items(const CodepointSet& set) {
  std::string out;
  for (auto [lo, hi] : set.ranges()) {
    out += class_char(lo);
    if (hi > lo + 1) out += '-';
    if (hi > lo) out += class_char(hi);
  }
  return out;
}

std::string join_alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
  return out + " )";
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    int n = b < 0x80 ? 0 : b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
    if (n <= 0 || i + n >= s.size()) {
      out += static_cast<char32_t>(b);
      ++i;
      continue;
    }
    char32_t cp = b & (0x3F >> n);
    for (int k = 1; k <= n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out += cp;
    i += n + 1;
  }
  return out;
}

std::string utf8_of(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

std::string json_quote(std::string_view utf8) {
  // nlohmann writes JSON.stringify's escapes; invalid UTF-8 (not in a parsed schema) is replaced.
  return nlohmann::json(std::string(utf8))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---- CodepointSet ----

CodepointSet::CodepointSet(std::vector<Range> ranges) {
  for (auto [lo, hi] : ranges) add(lo, hi);
}

void CodepointSet::add(char32_t lo, char32_t hi) {
  if (lo > hi) return;
  std::vector<Range> out;
  bool placed = false;
  for (auto r : ranges_) {
    if (r.second + 1 < lo) {
      out.push_back(r);
    } else if (hi + 1 < r.first) {
      if (!placed) out.emplace_back(lo, hi), placed = true;
      out.push_back(r);
    } else {
      lo = std::min(lo, r.first);
      hi = std::max(hi, r.second);
    }
  }
  if (!placed) out.emplace_back(lo, hi);
  ranges_ = std::move(out);
}

void CodepointSet::add(const CodepointSet& other) {
  for (auto [lo, hi] : other.ranges_) add(lo, hi);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  char32_t next = 0;
  for (auto [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.emplace_back(next, kMaxCodepoint);
  return out;
}

CodepointSet CodepointSet::minus(const CodepointSet& other) const {
  CodepointSet keep = other.complement();
  CodepointSet out;
  for (auto [lo, hi] : ranges_) {
    for (auto [klo, khi] : keep.ranges_) {
      char32_t a = std::max(lo, klo), b = std::min(hi, khi);
      if (a <= b) out.ranges_.emplace_back(a, b);
    }
  }
  return out;
}

bool CodepointSet::contains(char32_t cp) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [cp](const Range& r) { return r.first <= cp && cp <= r.second; });
}

std::string gbnf_class(const CodepointSet& set) {
  CodepointSet positive = set.minus(kSurrogates);
  CodepointSet negative = positive.complement();  // holds the surrogates: [^...] leaves them out
  std::string pos = "[" + class_items(positive) + "]";
  std::string neg = "[^" + class_items(negative) + "]";
  return neg.size() < pos.size() ? neg : pos;
}

std::string json_char_in(const CodepointSet& set) {
  CodepointSet special({{0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}});
  CodepointSet plain = set.minus(special).minus(kSurrogates);
  std::vector<std::string> alts;
  if (!plain.empty()) alts.push_back(gbnf_class(plain));
  if (set.contains('"')) alts.push_back(gbnf_literal("\\\""));
  if (set.contains('\\')) alts.push_back(gbnf_literal("\\\\"));
  std::string letters;
  std::string low[2];  // \u000x and \u001x: the hex digits x
  for (char32_t c = 0; c < 0x20; ++c) {
    if (!set.contains(c)) continue;
    const char* letter = c == '\b'   ? "b"
                         : c == '\t' ? "t"
                         : c == '\n' ? "n"
                         : c == '\f' ? "f"
                         : c == '\r' ? "r"
                                     : nullptr;
    if (letter) {
      letters += letter;
    } else {
      unsigned d = c & 15;
      low[c >> 4] += d < 10 ? std::string(1, static_cast<char>('0' + d))
                            : fmt::format("{}{}", static_cast<char>('a' + d - 10),
                                          static_cast<char>('A' + d - 10));
    }
  }
  if (!letters.empty()) alts.push_back("\"\\\\\" [" + letters + "]");
  for (int hi = 0; hi < 2; ++hi) {
    if (!low[hi].empty()) alts.push_back(fmt::format("\"\\\\u00{}\" [{}]", hi, low[hi]));
  }
  if (alts.empty()) return {};
  return join_alternatives(alts);
}

// ---- pattern ----

namespace {

const CodepointSet kDigits = CodepointSet::of('0', '9');
const CodepointSet kWord({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
const CodepointSet kSpace({{'\t', '\r'},
                           {' ', ' '},
                           {0xA0, 0xA0},
                           {0x1680, 0x1680},
                           {0x2000, 0x200A},
                           {0x2028, 0x2029},
                           {0x202F, 0x202F},
                           {0x205F, 0x205F},
                           {0x3000, 0x3000},
                           {0xFEFF, 0xFEFF}});
const CodepointSet kLineTerminators({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

struct Piece {
  std::string text;
  std::int64_t cost = 0;
  bool atomic = true;   // can take a postfix operator as is
  std::string literal;  // non-empty: an unquantified literal's JSON text (merged with others)
};

// Recursive descent over the pattern's code points; the first error stops it.
class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, std::string_view path)
      : p_(decode_utf8(pattern)), path_(path) {}

  Result<std::string> run(std::int64_t* elements) {
    Piece whole = alternation(/*top=*/true);
    if (error_.empty() && i_ < p_.size()) fail("unbalanced ')'");
    if (!error_.empty()) {
      return Error(StatusCode::kInvalidArgument, "{}: 'pattern' {}", path_, error_);
    }
    *elements += whole.cost;
    return whole.text;
  }

 private:
  void fail(std::string_view what) {
    if (error_.empty()) error_ = std::string(what);
  }
  bool at(char32_t c) const { return i_ < p_.size() && p_[i_] == c; }

  Piece alternation(bool top) {
    std::vector<Piece> alts;
    alts.push_back(sequence(top));
    while (error_.empty() && at('|')) {
      ++i_;
      alts.push_back(sequence(top));
    }
    Piece out;
    std::vector<std::string> texts;
    bool empty_alt = false;
    for (auto& a : alts) {
      out.cost += a.cost;
      if (a.text.empty()) {
        empty_alt = true;
      } else {
        texts.push_back(a.text);
      }
    }
    if (texts.empty()) return out;
    if (texts.size() == 1 && !empty_alt)
      return alts.size() == 1 ? alts[0] : Piece{texts[0], out.cost, false, {}};
    out.text = join_alternatives(texts);
    if (empty_alt) out.text += "?";
    return out;
  }

  Piece sequence(bool top) {
    std::vector<Piece> items;
    bool anchored_start = false, anchored_end = false;
    while (error_.empty() && i_ < p_.size() && !at('|') && !at(')')) {
      if (at('^')) {
        if (!top || !items.empty() || anchored_start) return fail("'^' only at the start"), Piece{};
        anchored_start = true;
        ++i_;
        continue;
      }
      if (at('$')) {
        bool last = i_ + 1 == p_.size() || p_[i_ + 1] == '|';
        if (!top || !last) return fail("'$' only at the end"), Piece{};
        anchored_end = true;
        ++i_;
        continue;
      }
      items.push_back(quantified());
    }
    if (top && !anchored_start) items.insert(items.begin(), Piece{"char*", 1, true, {}});
    if (top && !anchored_end) items.push_back(Piece{"char*", 1, true, {}});
    Piece out;
    std::string pending;  // adjacent literal JSON text
    auto flush = [&] {
      if (pending.empty()) return;
      out.text += (out.text.empty() ? "" : " ") + gbnf_literal(pending);
      pending.clear();
    };
    for (auto& it : items) {
      out.cost += it.cost;
      if (!it.literal.empty()) {
        pending += it.literal;
        continue;
      }
      flush();
      if (!it.text.empty()) out.text += (out.text.empty() ? "" : " ") + it.text;
    }
    flush();
    out.atomic = items.size() == 1 && items[0].atomic;
    return out;
  }

  // {m}, {m,}, {m,n} at i_ (just after '{'); false (position kept) when it is not one: ECMA then
  // reads the brace as a literal.
  bool braces(int* m, int* n) {
    std::size_t j = i_;
    auto number = [&](int* v) {
      std::size_t start = j;
      std::int64_t x = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        x = std::min<std::int64_t>(x * 10 + (p_[j] - '0'), 1 << 30);
        ++j;
      }
      *v = static_cast<int>(x);
      return j > start;
    };
    if (!number(m)) return false;
    *n = *m;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(n)) *n = -1;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  Piece quantified() {
    Piece a = atom();
    if (!error_.empty() || i_ >= p_.size()) return a;
    int m = 0, n = 0;
    char32_t q = p_[i_];
    if (q == '*' || q == '+' || q == '?') {
      ++i_;
      m = q == '+' ? 1 : 0;
      n = q == '?' ? 1 : -1;
    } else if (q == '{') {
      ++i_;
      if (!braces(&m, &n)) {
        --i_;
        return a;
      }
    } else {
      return a;
    }
    if (at('?')) ++i_;  // lazy: the same language
    if (m > kMaxRepeat || n > kMaxRepeat) {
      fail(fmt::format("repetition bound over {}", kMaxRepeat));
      return a;
    }
    if (n >= 0 && n < m) return fail("repetition {m,n} with n < m"), a;
    if (a.text.empty() && a.literal.empty()) return a;
    std::string base = !a.literal.empty() ? gbnf_literal(a.literal) : a.text;
    if (!a.atomic && a.literal.empty()) base = "( " + base + " )";
    Piece out;
    out.cost = a.cost * std::max<std::int64_t>(1, n < 0 ? m + 1 : n);
    if (m == 0 && n < 0) {
      out.text = base + "*";
    } else if (m == 1 && n < 0) {
      out.text = base + "+";
    } else if (m == 0 && n == 1) {
      out.text = base + "?";
    } else if (n < 0) {
      out.text = fmt::format("{}{{{},}}", base, m);
    } else if (m == n) {
      out.text = fmt::format("{}{{{}}}", base, m);
    } else {
      out.text = fmt::format("{}{{{},{}}}", base, m, n);
    }
    return out;
  }

  Piece of_set(const CodepointSet& set) {
    std::string text = json_char_in(set);
    if (text.empty()) fail("has a class that matches nothing");
    return Piece{text, 4, text.front() != '(', {}};
  }

  Piece of_char(char32_t c) {
    std::string q = json_quote(utf8_of(c));
    return Piece{{}, static_cast<std::int64_t>(q.size() - 2), true, q.substr(1, q.size() - 2)};
  }

  Piece atom() {
    char32_t c = p_[i_++];
    switch (c) {
      case '(':
        return group();
      case '[':
        return of_set(char_class());
      case '.':
        return of_set(kLineTerminators.complement());
      case '\\': {
        CodepointSet set;
        if (!escape(/*in_class=*/false, &set)) return {};
        if (set.ranges().size() == 1 && set.ranges()[0].first == set.ranges()[0].second) {
          return of_char(set.ranges()[0].first);
        }
        return of_set(set);
      }
      case '*':
      case '+':
      case '?':
        fail("has a quantifier with nothing to repeat");
        return {};
      default:
        return of_char(c);
    }
  }

  Piece group() {
    if (at('?')) {
      ++i_;
      if (at(':')) {
        ++i_;
      } else if (at('<') && i_ + 1 < p_.size() && p_[i_ + 1] != '=' && p_[i_ + 1] != '!') {
        while (i_ < p_.size() && p_[i_] != '>') ++i_;  // a named group
        ++i_;
      } else {
        fail("uses a lookaround assertion ((?=, (?!, (?<=, (?<!), which is not supported");
        return {};
      }
    }
    Piece inner = alternation(/*top=*/false);
    if (!error_.empty()) return {};
    if (!at(')')) return fail("has an unclosed '('"), Piece{};
    ++i_;
    if (!inner.literal.empty()) inner = Piece{gbnf_literal(inner.literal), inner.cost, true, {}};
    if (!inner.atomic) inner.text = "( " + inner.text + " )";
    inner.atomic = true;
    return inner;
  }

  CodepointSet char_class() {
    CodepointSet set;
    bool negated = at('^');
    if (negated) ++i_;
    bool first = true;
    while (error_.empty() && i_ < p_.size() && (first || !at(']'))) {
      first = false;
      CodepointSet lo_set;
      if (!class_atom(&lo_set)) return {};
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        CodepointSet hi_set;
        if (!class_atom(&hi_set)) return {};
        auto single = [](const CodepointSet& s) {
          return s.ranges().size() == 1 && s.ranges()[0].first == s.ranges()[0].second;
        };
        if (!single(lo_set) || !single(hi_set)) return fail("has a class range of a class"), set;
        char32_t lo = lo_set.ranges()[0].first, hi = hi_set.ranges()[0].first;
        if (lo > hi) return fail("has a class range out of order"), set;
        set.add(lo, hi);
      } else {
        set.add(lo_set);
      }
    }
    if (!at(']')) return fail("has an unclosed '['"), set;
    ++i_;
    return negated ? set.complement() : set;
  }

  bool class_atom(CodepointSet* set) {
    char32_t c = p_[i_++];
    if (c != '\\') {
      set->add(c, c);
      return true;
    }
    return escape(/*in_class=*/true, set);
  }

  int hex_digits(std::size_t count) {
    int v = 0;
    for (std::size_t k = 0; k < count; ++k, ++i_) {
      if (i_ >= p_.size() || !std::isxdigit(static_cast<int>(p_[i_] < 128 ? p_[i_] : 0))) {
        return -1;
      }
      char32_t d = p_[i_];
      v = v * 16 + static_cast<int>(d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After a backslash: the code points it stands for, or false after fail().
  bool escape(bool in_class, CodepointSet* set) {
    if (i_ >= p_.size()) return fail("ends with '\\'"), false;
    char32_t c = p_[i_++];
    auto one = [&](char32_t cp) {
      set->add(cp, cp);
      return true;
    };
    switch (c) {
      case 'd':
        return set->add(kDigits), true;
      case 'D':
        return set->add(kDigits.complement()), true;
      case 'w':
        return set->add(kWord), true;
      case 'W':
        return set->add(kWord.complement()), true;
      case 's':
        return set->add(kSpace), true;
      case 'S':
        return set->add(kSpace.complement()), true;
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case '0':
        return one(0);
      case 'b':
        if (in_class) return one('\b');
        return fail("uses the word boundary '\\b', which is not supported"), false;
      case 'B':
        return fail("uses the assertion '\\B', which is not supported"), false;
      case 'k':
        return fail("uses a backreference, which is not supported"), false;
      case 'p':
      case 'P':
        return fail("uses a Unicode property escape, which is not supported"), false;
      case 'c':
        if (i_ < p_.size() && ((p_[i_] | 0x20) >= 'a' && (p_[i_] | 0x20) <= 'z')) {
          return one(p_[i_++] % 32);
        }
        return one('c');
      case 'x': {
        int v = hex_digits(2);
        if (v < 0) return fail("has a malformed '\\x' escape"), false;
        return one(static_cast<char32_t>(v));
      }
      case 'u': {
        if (at('{')) {
          ++i_;
          std::int64_t v = 0;
          std::size_t start = i_;
          while (i_ < p_.size() && p_[i_] != '}' && v <= kMaxCodepoint) {
            int d = hex_digits(1);
            if (d < 0) return fail("has a malformed '\\u{...}' escape"), false;
            v = v * 16 + d;
          }
          if (!at('}') || i_ == start || v > kMaxCodepoint) {
            return fail("has a malformed '\\u{...}' escape"), false;
          }
          ++i_;
          return one(static_cast<char32_t>(v));
        }
        int v = hex_digits(4);
        if (v < 0) return fail("has a malformed '\\u' escape"), false;
        return one(static_cast<char32_t>(v));
      }
      default:
        if (c >= '1' && c <= '9') {
          return fail("uses a backreference, which is not supported"), false;
        }
        return one(c);  // an identity escape: \. \* \\ \/ ...
    }
  }

  std::u32string p_;
  std::string path_;
  std::size_t i_ = 0;
  std::string error_;
};

}  // namespace

Result<std::string> pattern_to_gbnf(std::string_view pattern, std::string_view path,
                                    std::int64_t* elements) {
  return RegexCompiler(pattern, path).run(elements);
}

// ---- format ----

std::optional<std::string> format_to_gbnf(std::string_view format) {
  // Days as each month has them; February 29th only in leap years (divisible by 4, and by 400
  // when by 100), as RFC 3339 and validators (ajv-formats) check.
  const std::string day28 = R"(( "0" [1-9] | "1" [0-9] | "2" [0-8] ))";
  const std::string leap_year =
      R"(( [0-9] [0-9] ( "0" [48] | [2468] [048] | [13579] [26] ) | ( "0" [048] | [2468] [048] | [13579] [26] ) "00" ))";
  const std::string date = R"(( [0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( )" + day28 +
                           R"( | "29" | "30" | "31" ) | ( "0" [469] | "11" ) "-" ( )" + day28 +
                           R"( | "29" | "30" ) | "02-" )" + day28 + R"( ) | )" + leap_year +
                           R"( "-02-29" ))";
  const std::string hour = R"(( [01] [0-9] | "2" [0-3] ))";
  // Second 60 is valid only at 23:59 UTC (a leap second): left out rather than half-checked.
  const std::string time =
      hour + R"( ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( [Zz] | [+-] )" + hour +
      R"( ":" [0-5] [0-9] ))";
  if (format == "date") return date;
  if (format == "time") return time;
  if (format == "date-time") return date + " [Tt] " + time;
  if (format == "uuid") {
    return R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})";
  }
  if (format == "ipv4") {
    const std::string octet =
        R"(( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9] ))";
    return fmt::format(R"({0} "." {0} "." {0} "." {0})", octet);
  }
  if (format == "email") {
    // RFC 5321 dot-atoms only: no quoted local parts, no address literals.
    const std::string atom = gbnf_class(CodepointSet({{'A', 'Z'},
                                                      {'a', 'z'},
                                                      {'0', '9'},
                                                      {'!', '!'},
                                                      {'#', '\''},
                                                      {'*', '+'},
                                                      {'-', '-'},
                                                      {'/', '/'},
                                                      {'=', '='},
                                                      {'?', '?'},
                                                      {'^', '`'},
                                                      {'{', '~'}})) +
                             "{1,64}";
    const std::string label = R"([A-Za-z0-9] ( [A-Za-z0-9\x2d]{0,61} [A-Za-z0-9] )?)";
    return fmt::format(R"({0} ( "." {0} )* "@" {1} ( "." {1} )+)", atom, label);
  }
  return std::nullopt;
}

}  // namespace recur::grammar::schema_detail
