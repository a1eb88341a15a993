// GBNF text to the lowered byte grammar (grammar.h). Repetitions become right-recursive helper
// rules (the matcher does not grow its stack on a tail reference, so x* over a long string stays
// one frame deep); character classes become their UTF-8 byte sequences (char_class.h).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "grammar/char_class.h"
#include "grammar/grammar.h"
#include "util/utf8.h"

namespace recur::grammar {
namespace {

using Element = Grammar::Element;
using Seq = std::vector<Element>;
using Alts = std::vector<Seq>;

Element byte_element(std::uint8_t lo, std::uint8_t hi) {
  Element e;
  for (int b = lo; b <= hi; ++b) e.bytes[b >> 6] |= 1ull << (b & 63);
  return e;
}

Element ref_element(std::int32_t rule) {
  Element e;
  e.rule = rule;
  return e;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<std::shared_ptr<const Grammar>> run(std::string_view root) {
    skip_space();
    while (pos_ < s_.size() && ok()) {
      parse_rule();
      skip_space();
    }
    if (!ok()) return error_;
    if (rules_.empty()) return Error(StatusCode::kInvalidArgument, "grammar: no rules");
    for (const Draft& d : rules_) {
      if (!d.defined) {
        fail(d.first_use, "rule '{}' is used but never defined", d.name);
        return error_;
      }
    }
    auto root_it = by_name_.find(std::string(root));
    if (root_it == by_name_.end()) {
      return Error(StatusCode::kInvalidArgument, "grammar: no rule named '{}' (the start rule)",
                   root);
    }
    auto g = std::make_shared<Grammar>();
    g->root = root_it->second;
    for (Draft& d : rules_) {
      Grammar::Rule rule;
      rule.name = d.name;
      for (Seq& alt : d.alts) {
        rule.alternatives.push_back(static_cast<std::int32_t>(g->elements.size()));
        g->elements.insert(g->elements.end(), alt.begin(), alt.end());
        Element end;
        end.rule = Element::kEnd;
        g->elements.push_back(end);
      }
      g->rules.push_back(std::move(rule));
    }
    if (Status s = drop_unproductive(*g); !s.is_ok()) return s;
    if (Status s = check_left_recursion(*g); !s.is_ok()) return s;
    return std::shared_ptr<const Grammar>(std::move(g));
  }

 private:
  struct Draft {
    std::string name;
    Alts alts;
    bool defined = false;
    std::size_t first_use = 0;
  };

  bool ok() const { return error_.is_ok(); }

  template <typename... Args>
  bool fail(std::size_t at, fmt::format_string<Args...> f, Args&&... args) {
    if (!ok()) return false;
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = Status(StatusCode::kInvalidArgument,
                    fmt::format("grammar line {}, column {}: {}", line, col,
                                fmt::format(f, std::forward<Args>(args)...)));
    return false;
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view name_at(std::size_t at) const {
    std::size_t end = at;
    while (end < s_.size() && is_name_char(s_[end])) ++end;
    return s_.substr(at, end - at);
  }

  // A rule definition starts here: `name ::=`.
  bool at_definition() const {
    std::string_view name = name_at(pos_);
    if (name.empty()) return false;
    std::size_t p = pos_ + name.size();
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
    return s_.substr(p, 3) == "::=";
  }

  std::int32_t rule_id(std::string_view name, std::size_t use) {
    auto it = by_name_.find(std::string(name));
    if (it != by_name_.end()) return it->second;
    const auto id = static_cast<std::int32_t>(rules_.size());
    rules_.push_back({.name = std::string(name), .first_use = use});
    by_name_.emplace(std::string(name), id);
    return id;
  }

  std::int32_t new_rule(std::string_view base, Alts alts) {
    std::string name;
    do {
      name = fmt::format("{}-{}", base, ++generated_);
    } while (by_name_.contains(name));
    std::int32_t id = rule_id(name, pos_);
    rules_[id].alts = std::move(alts);
    rules_[id].defined = true;
    return id;
  }

  bool count(std::size_t n) {
    elements_ += n;
    if (elements_ > static_cast<std::size_t>(kMaxElements)) {
      return fail(pos_, "the grammar lowers to more than {} elements", kMaxElements);
    }
    return true;
  }

  void parse_rule() {
    const std::size_t start = pos_;
    std::string_view name = name_at(pos_);
    if (name.empty()) {
      fail(pos_, "expected a rule name, got '{}'", s_[pos_]);
      return;
    }
    pos_ += name.size();
    skip_space();
    if (s_.substr(pos_, 3) != "::=") {
      fail(pos_, "expected '::=' after rule name '{}'", name);
      return;
    }
    pos_ += 3;
    std::int32_t id = rule_id(name, start);
    if (rules_[id].defined) {
      fail(start, "rule '{}' is defined twice", name);
      return;
    }
    rules_[id].defined = true;
    current_ = std::string(name);
    Alts alts;
    if (!parse_alternatives(alts, false)) return;
    rules_[id].alts = std::move(alts);
  }

  bool parse_alternatives(Alts& out, bool nested) {
    while (true) {
      Seq seq;
      if (!parse_sequence(seq, nested)) return false;
      out.push_back(std::move(seq));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return true;
    }
  }

  bool parse_sequence(Seq& out, bool nested) {
    while (true) {
      skip_space();
      if (pos_ >= s_.size()) return nested ? fail(pos_, "expected ')' before the end") : true;
      char c = s_[pos_];
      if (c == '|' || c == ')') {
        if (c == ')' && !nested) return fail(pos_, "unexpected ')'");
        return true;
      }
      if (!nested && at_definition()) return true;
      Seq atom;
      if (!parse_atom(atom)) return false;
      if (!parse_postfix(atom)) return false;
      out.insert(out.end(), atom.begin(), atom.end());
    }
  }

  bool parse_atom(Seq& out) {
    const std::size_t start = pos_;
    char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      while (true) {
        if (pos_ >= s_.size() || s_[pos_] == '\n') return fail(start, "unterminated literal");
        if (s_[pos_] == '"') break;
        char32_t cp;
        if (!parse_char(cp, false)) return false;
        std::string bytes;
        append_utf8(bytes, cp);
        for (char b : bytes) {
          const auto u = static_cast<std::uint8_t>(b);
          out.push_back(byte_element(u, u));
        }
      }
      ++pos_;
      return count(out.size());
    }
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++pos_;
      return class_elements({{0, 0x10FFFF}}, out);
    }
    if (c == '(') {
      // The parser recurses once per open group: a bound keeps a hostile grammar off the stack.
      if (depth_ >= kMaxGroupDepth) {
        return fail(start, "groups nest deeper than {} levels", kMaxGroupDepth);
      }
      ++pos_;
      Alts alts;
      ++depth_;
      const bool ok = parse_alternatives(alts, true);
      --depth_;
      if (!ok) return false;
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail(start, "'(' without a matching ')'");
      ++pos_;
      if (alts.size() == 1 && alts[0].size() == 1) {
        out = std::move(alts[0]);
      } else {
        out.push_back(ref_element(new_rule(current_, std::move(alts))));
      }
      return count(1);
    }
    std::string_view name = name_at(pos_);
    if (name.empty()) return fail(pos_, "unexpected character '{}'", c);
    pos_ += name.size();
    out.push_back(ref_element(rule_id(name, start)));
    return count(1);
  }

  // One character of a literal or class: an escape or a UTF-8 encoded code point.
  bool parse_char(char32_t& out, bool in_class) {
    const std::size_t start = pos_;
    auto c = static_cast<unsigned char>(s_[pos_]);
    if (c == '\\') {
      if (pos_ + 1 >= s_.size()) return fail(start, "escape at the end of the grammar");
      char e = s_[pos_ + 1];
      pos_ += 2;
      int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
      if (digits > 0) {
        char32_t v = 0;
        for (int i = 0; i < digits; ++i) {
          int h = pos_ < s_.size() ? hex_value(s_[pos_]) : -1;
          if (h < 0) return fail(start, "'\\{}' needs {} hex digits", e, digits);
          v = v * 16 + static_cast<char32_t>(h);
          ++pos_;
        }
        if (v > 0x10FFFF)
          return fail(start, "code point U+{:X} is past U+10FFFF", static_cast<std::uint32_t>(v));
        out = v;
        return true;
      }
      switch (e) {
        case 'n':
          out = '\n';
          return true;
        case 'r':
          out = '\r';
          return true;
        case 't':
          out = '\t';
          return true;
        case '0':
          out = 0;
          return true;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '.':
          out = static_cast<char32_t>(e);
          return true;
        default:
          return fail(start, "unknown escape '\\{}'{}", e, in_class ? " in a class" : "");
      }
    }
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + static_cast<std::size_t>(n) > s_.size()) {
      return fail(start, "invalid UTF-8 in the grammar");
    }
    char32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i) {
      auto cc = static_cast<unsigned char>(s_[pos_ + static_cast<std::size_t>(i)]);
      if ((cc & 0xC0) != 0x80) return fail(start, "invalid UTF-8 in the grammar");
      v = (v << 6) | (cc & 0x3F);
    }
    pos_ += static_cast<std::size_t>(n);
    out = v;
    return true;
  }

  bool parse_class(Seq& out) {
    const std::size_t start = pos_;
    ++pos_;
    bool negated = pos_ < s_.size() && s_[pos_] == '^';
    if (negated) ++pos_;
    std::vector<CodeRange> ranges;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') return fail(start, "unterminated '['");
      if (s_[pos_] == ']') break;
      char32_t lo, hi;
      if (!parse_char(lo, true)) return false;
      hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        if (!parse_char(hi, true)) return false;
        if (hi < lo) return fail(start, "range out of order in a class");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    if (negated) ranges = complement_ranges(ranges);
    return class_elements(std::move(ranges), out);
  }

  // A class is one byte element when every code point in it is ASCII, else a rule with one
  // alternative per UTF-8 byte sequence (shared by every identical class).
  bool class_elements(std::vector<CodeRange> ranges, Seq& out) {
    std::vector<ByteSeq> seqs = utf8_sequences(ranges);
    Element single;
    bool any_single = false;
    Alts alts;
    for (const ByteSeq& seq : seqs) {
      if (seq.size() == 1) {
        any_single = true;
        for (int b = seq[0].lo; b <= seq[0].hi; ++b) single.bytes[b >> 6] |= 1ull << (b & 63);
        continue;
      }
      Seq alt;
      for (const ByteRange& r : seq) alt.push_back(byte_element(r.lo, r.hi));
      alts.push_back(std::move(alt));
    }
    if (alts.empty()) {
      out.push_back(single);  // possibly empty: matches nothing
      return count(1);
    }
    if (any_single) alts.insert(alts.begin(), Seq{single});
    auto it = class_rules_.find(seqs);
    std::int32_t id;
    if (it != class_rules_.end()) {
      id = it->second;
    } else {
      std::size_t n = 0;
      for (const Seq& a : alts) n += a.size() + 1;
      if (!count(n)) return false;
      id = new_rule("char", std::move(alts));
      class_rules_.emplace(std::move(seqs), id);
    }
    out.push_back(ref_element(id));
    return count(1);
  }

  bool parse_int(int& out) {
    const std::size_t start = pos_;
    long v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      if (v > kMaxRepeat) return fail(start, "repetition bound past the limit of {}", kMaxRepeat);
      ++pos_;
    }
    out = static_cast<int>(v);
    return pos_ > start;
  }

  bool parse_postfix(Seq& atom) {
    while (pos_ < s_.size()) {
      const std::size_t start = pos_;
      char c = s_[pos_];
      int lo, hi;  // hi < 0: unbounded
      if (c == '*') {
        lo = 0, hi = -1;
        ++pos_;
      } else if (c == '+') {
        lo = 1, hi = -1;
        ++pos_;
      } else if (c == '?') {
        lo = 0, hi = 1;
        ++pos_;
      } else if (c == '{') {
        ++pos_;
        skip_space();
        lo = 0;
        bool has_lo = parse_int(lo);
        if (!ok()) return false;
        skip_space();
        hi = lo;
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_space();
          hi = -1;
          if (pos_ < s_.size() && s_[pos_] != '}' && !parse_int(hi)) {
            return ok() ? fail(start, "expected a number in '{{m,n}}'") : false;
          }
          skip_space();
        } else if (!has_lo) {
          return fail(start, "expected a number in '{{m}}'");
        }
        if (pos_ >= s_.size() || s_[pos_] != '}') return fail(start, "expected '}}' to close '{{'");
        ++pos_;
        if (hi >= 0 && hi < lo)
          return fail(start, "repetition {{{},{}}} has max below min", lo, hi);
      } else {
        return true;
      }
      if (!repeat(atom, lo, hi)) return false;
    }
    return true;
  }

  bool repeat(Seq& atom, int lo, int hi) {
    Element x = atom.size() == 1 ? atom[0] : ref_element(new_rule(current_, Alts{atom}));
    Seq out(static_cast<std::size_t>(lo), x);
    if (!count(out.size() + 4)) return false;
    if (hi < 0) {
      // star ::= x star | (empty)
      std::int32_t star = new_rule(current_, {});
      rules_[star].alts = {Seq{x, ref_element(star)}, Seq{}};
      out.push_back(ref_element(star));
    } else if (hi > lo) {
      // opt_k ::= x opt_(k-1) | (empty), opt_1 ::= x | (empty)
      std::int32_t prev = -1;
      for (int k = 1; k <= hi - lo; ++k) {
        if (!count(4)) return false;
        Seq first{x};
        if (prev >= 0) first.push_back(ref_element(prev));
        prev = new_rule(current_, Alts{std::move(first), Seq{}});
      }
      out.push_back(ref_element(prev));
    }
    atom = std::move(out);
    return true;
  }

  // Alternatives that can never match a whole string (an empty class, a rule that only recurses)
  // are dropped, so that every state the matcher reaches can still end in a sentence: a
  // constrained sequence never gets stuck with nothing allowed.
  static Status drop_unproductive(Grammar& g) {
    const std::size_t n = g.rules.size();
    std::vector<bool> productive(n, false);
    auto element_ok = [&](const Element& e) {
      if (e.is_bytes()) return (e.bytes[0] | e.bytes[1] | e.bytes[2] | e.bytes[3]) != 0;
      return productive[static_cast<std::size_t>(e.rule)] ? true : false;
    };
    auto alt_ok = [&](std::int32_t a) {
      for (std::int32_t i = a; !g.elements[static_cast<std::size_t>(i)].is_end(); ++i) {
        if (!element_ok(g.elements[static_cast<std::size_t>(i)])) return false;
      }
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < n; ++r) {
        if (productive[r]) continue;
        for (std::int32_t a : g.rules[r].alternatives) {
          if (alt_ok(a)) {
            productive[r] = changed = true;
            break;
          }
        }
      }
    }
    if (!productive[static_cast<std::size_t>(g.root)]) {
      return Error(StatusCode::kInvalidArgument, "grammar: rule '{}' matches no string at all",
                   g.rules[static_cast<std::size_t>(g.root)].name);
    }
    for (auto& rule : g.rules)
      std::erase_if(rule.alternatives, [&](std::int32_t a) { return !alt_ok(a); });
    return Status::ok();
  }

  // The matcher expands references top-down: a rule that reaches itself before consuming a byte
  // would expand forever.
  static Status check_left_recursion(const Grammar& g) {
    const std::size_t n = g.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (std::int32_t a : g.rules[r].alternatives) {
          std::int32_t i = a;
          while (g.elements[i].rule >= 0 && nullable[g.elements[i].rule]) ++i;
          if (g.elements[i].is_end()) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Depth-first search over "r may start with s" edges; a back edge is a cycle.
    std::vector<std::uint8_t> color(n, 0);
    for (std::size_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      std::vector<std::vector<std::int32_t>> edges_of;
      std::vector<std::pair<std::int32_t, std::size_t>> path{{static_cast<std::int32_t>(start), 0}};
      color[start] = 1;
      auto edges = [&](std::int32_t r) {
        std::vector<std::int32_t> out;
        for (std::int32_t a : g.rules[r].alternatives) {
          for (std::int32_t i = a; !g.elements[i].is_end(); ++i) {
            const auto& e = g.elements[i];
            if (e.is_bytes()) break;
            out.push_back(e.rule);
            if (!nullable[e.rule]) break;
          }
        }
        return out;
      };
      edges_of.push_back(edges(static_cast<std::int32_t>(start)));
      while (!path.empty()) {
        auto& [r, next] = path.back();
        auto& es = edges_of.back();
        if (next == es.size()) {
          color[r] = 2;
          path.pop_back();
          edges_of.pop_back();
          continue;
        }
        std::int32_t s = es[next++];
        if (color[s] == 1) {
          return Error(StatusCode::kInvalidArgument,
                       "grammar: rule '{}' is left-recursive (it can reach itself without "
                       "consuming a character), which this matcher cannot expand",
                       g.rules[s].name);
        }
        if (color[s] == 0) {
          color[s] = 1;
          path.push_back({s, 0});
          edges_of.push_back(edges(s));
        }
      }
    }
    return Status::ok();
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::vector<Draft> rules_;
  std::unordered_map<std::string, std::int32_t> by_name_;
  std::map<std::vector<ByteSeq>, std::int32_t> class_rules_;
  std::string current_ = "rule";
  int generated_ = 0;
  std::size_t elements_ = 0;
  int depth_ = 0;  // groups open around the parser
  Status error_;
};

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      out += ch;  // printable ASCII, or a byte of a UTF-8 sequence
    }
  }
  return out + "\"";
}

std::string prefix_rules(std::string_view gbnf, std::string_view prefix) {
  std::string out;
  out.reserve(gbnf.size() * 5 / 4);
  for (std::size_t i = 0; i < gbnf.size();) {
    const char c = gbnf[i];
    if (c == '"' || c == '[') {
      // Copy a literal or class whole, escapes included.
      const char close = c == '"' ? '"' : ']';
      std::size_t j = i + 1;
      while (j < gbnf.size() && gbnf[j] != close && gbnf[j] != '\n') j += gbnf[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, gbnf.size());
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (c == '#') {
      std::size_t j = gbnf.find('\n', i);
      if (j == std::string_view::npos) j = gbnf.size();
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (c == '{') {
      // A repetition's bounds are numbers, not names.
      std::size_t j = gbnf.find('}', i);
      j = j == std::string_view::npos ? gbnf.size() : j + 1;
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (is_name_char(c)) {
      std::size_t j = i;
      while (j < gbnf.size() && is_name_char(gbnf[j])) ++j;
      out.append(prefix);
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, std::string_view root) {
  return Parser(text).run(root);
}

}  // namespace recur::grammar
