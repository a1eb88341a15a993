// A small recursive-descent reader of Python call lists (ast.literal_eval's subset for values),
// writing JSON with nlohmann. Depth-limited so hostile model output cannot exhaust the stack.
#include "server/pythonic_calls.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  std::optional<std::vector<chat::ToolCall>> calls() {
    std::vector<chat::ToolCall> out;
    if (!eat('[')) return std::nullopt;
    if (!eat(']')) {
      do {
        auto c = call();
        if (!c) return std::nullopt;
        out.push_back(std::move(*c));
      } while (eat(','));
      if (!eat(']')) return std::nullopt;
    }
    skip_space();
    if (i_ != s_.size() || out.empty()) return std::nullopt;
    return out;
  }

 private:
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  static bool name_char(char c, bool first) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    return alpha || (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
  }
  // Python identifiers, plus '-' and '.' for the function names OpenAI tools allow.
  std::string name() {
    skip_space();
    const std::size_t start = i_;
    while (i_ < s_.size() && name_char(s_[i_], i_ == start)) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  std::optional<chat::ToolCall> call() {
    chat::ToolCall c;
    c.name = name();
    if (c.name.empty() || !eat('(')) return std::nullopt;
    json args = json::object();
    if (!eat(')')) {
      do {
        const std::string key = name();
        if (key.empty() || !eat('=')) return std::nullopt;  // keyword arguments only
        auto v = value(0);
        if (!v) return std::nullopt;
        args[key] = std::move(*v);
      } while (eat(',') && !peek(')'));
      if (!eat(')')) return std::nullopt;
    }
    c.arguments_json = args.dump(-1, ' ', false, json::error_handler_t::replace);
    return c;
  }

  bool peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }

  std::optional<json> value(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    skip_space();
    if (i_ >= s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '"' || c == '\'') return string();
    if (c == '[' || c == '(') return sequence(c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(depth);
    if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) return number();
    const std::string word = name();
    if (word == "True" || word == "true") return json(true);
    if (word == "False" || word == "false") return json(false);
    if (word == "None" || word == "null") return json(nullptr);
    return std::nullopt;
  }

  std::optional<json> sequence(char close, int depth) {
    ++i_;
    json arr = json::array();
    if (eat(close)) return arr;
    do {
      if (peek(close)) break;  // a trailing comma
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
    } while (eat(','));
    if (!eat(close)) return std::nullopt;
    return arr;
  }

  std::optional<json> dict(int depth) {
    ++i_;
    json obj = json::object();
    if (eat('}')) return obj;
    do {
      if (peek('}')) break;
      auto k = value(depth + 1);
      if (!k || !eat(':')) return std::nullopt;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      // JSON keys are strings: a number or a constant key becomes its JSON text.
      obj[k->is_string() ? k->get<std::string>() : k->dump()] = std::move(*v);
    } while (eat(','));
    if (!eat('}')) return std::nullopt;
    return obj;
  }

  std::optional<json> number() {
    const std::size_t start = i_;
    while (i_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
            s_[i_] == 'E' || s_[i_] == '-' || s_[i_] == '+' || s_[i_] == '_')) {
      ++i_;
    }
    std::string text;
    for (char ch : s_.substr(start, i_ - start)) {
      if (ch != '_') text += ch;  // 1_000
    }
    if (!text.empty() && text.front() == '+') text.erase(0, 1);
    json j = json::parse(text, nullptr, false);
    if (!j.is_discarded() && j.is_number()) return j;
    // Python spellings JSON lacks: "1.", ".5".
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
    return json(d);
  }

  // A Python string literal with its escapes (\n, \t, \\, \', \", \xHH, \uHHHH; an unknown
  // escape keeps its backslash, as Python does).
  std::optional<json> string() {
    const char quote = s_[i_++];
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) {
      char ch = s_[i_++];
      if (ch != '\\') {
        out += ch;
        continue;
      }
      if (i_ >= s_.size()) return std::nullopt;
      const char e = s_[i_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case 'x':
        case 'u': {
          const std::size_t n = e == 'x' ? 2 : 4;
          if (i_ + n > s_.size()) return std::nullopt;
          const std::string hex(s_.substr(i_, n));
          char* end = nullptr;
          const unsigned long cp = std::strtoul(hex.c_str(), &end, 16);
          if (end != hex.c_str() + n) return std::nullopt;
          i_ += n;
          append_utf8(out, static_cast<char32_t>(cp));
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    if (i_ >= s_.size()) return std::nullopt;
    ++i_;
    return json(std::move(out));
  }

  static void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

std::optional<std::vector<chat::ToolCall>> parse_pythonic_calls(std::string_view text) {
  return Reader(text).calls();
}

}  // namespace recur::server
