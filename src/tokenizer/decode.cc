// Decoders as HF's decode_chain: each step maps the list of token strings; the result is joined.
// Works on bytes: the UTF-8 repair happens once at the end (decode), or not at all for streaming.
#include <algorithm>

#include "tokenizer/model.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer::detail {
namespace {

using Tokens = std::vector<std::string>;

// A token whose characters all come from the byte table stands for those bytes; any other
// token (an added token such as "<|im_start|>" with unmapped characters) stands for itself.
void byte_level(Tokens& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    std::size_t mark = bytes.size();
    bool mapped = true;
    for (std::size_t pos = 0, n = 0; pos < t.size(); pos += n) {
      int b = char_byte(utf8_decode(t, pos, n));
      if (b < 0) {
        mapped = false;
        break;
      }
      bytes += static_cast<char>(b);
    }
    if (!mapped) {
      bytes.resize(mark);
      bytes += t;
    }
  }
  tokens.assign(1, std::move(bytes));
}

int fallback_byte(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Runs of "<0xAB>" tokens become their bytes when valid UTF-8, else one U+FFFD per token. With
// keep_tail, a run at the very end that is an unfinished character stays raw (streaming); with
// raw, every run stays its bytes.
void byte_fallback(Tokens& tokens, bool keep_tail, bool raw) {
  Tokens out;
  std::string run;
  std::size_t run_n = 0;
  auto flush = [&](bool at_end) {
    if (run_n == 0) return;
    if (raw || utf8_is_valid(run) ||
        (at_end && keep_tail &&
         utf8_is_valid(run.substr(0, run.size() - utf8_incomplete_tail(run))))) {
      out.push_back(run);
    } else {
      for (std::size_t i = 0; i < run_n; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    run.clear();
    run_n = 0;
  };
  for (std::string& t : tokens) {
    int b = fallback_byte(t);
    if (b >= 0) {
      run += static_cast<char>(b);
      ++run_n;
      continue;
    }
    flush(false);
    out.push_back(std::move(t));
  }
  flush(true);
  tokens = std::move(out);
}

void strip(Tokens& tokens, const DecStep& s) {
  std::size_t n = 0;
  char32_t ch = utf8_decode(s.content, 0, n);
  for (std::string& t : tokens) {
    std::size_t begin = 0, end = t.size(), k = 0;
    for (std::size_t i = 0; i < s.start && begin < end; ++i, begin += k) {
      if (utf8_decode(t, begin, k) != ch) break;
    }
    for (std::size_t i = 0; i < s.stop && end > begin; ++i) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(t[start]) & 0xC0) == 0x80) --start;
      if (utf8_decode(t, start, k) != ch) break;
      end = start;
    }
    t = t.substr(begin, end - begin);
  }
}

void replace(Tokens& tokens, std::string_view from, std::string_view to) {
  for (std::string& t : tokens) {
    std::string out;
    std::size_t pos = 0;
    for (std::size_t hit; (hit = t.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
      out.append(t, pos, hit - pos);
      out.append(to);
    }
    if (pos == 0) continue;
    out.append(t, pos, std::string::npos);
    t = std::move(out);
  }
}

void metaspace(Tokens& tokens, const DecStep& s) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    std::string out;
    std::size_t pos = 0;
    for (std::size_t hit; (hit = t.find(s.content, pos)) != std::string::npos;
         pos = hit + s.content.size()) {
      out.append(t, pos, hit - pos);
      if (!(i == 0 && s.prepend)) out += ' ';
    }
    out.append(t, pos, std::string::npos);
    t = std::move(out);
  }
}

}  // namespace

std::string decode_tokens(const Model& model, std::span<const TokenId> ids, bool skip_special,
                          bool keep_tail, bool raw) {
  Tokens tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    auto added = model.added_by_id.find(id);
    if (added != model.added_by_id.end()) {
      const AddedToken& a = model.added[added->second];
      if (!(skip_special && a.special)) tokens.push_back(a.content);
    } else if (id >= 0 && static_cast<std::size_t>(id) < model.bpe.id_to_token.size() &&
               !model.bpe.id_to_token[id].empty()) {
      tokens.push_back(model.bpe.id_to_token[id]);
    }
  }
  using K = DecStep::Kind;
  for (const DecStep& s : model.decoders) {
    switch (s.kind) {
      case K::kByteLevel:
        byte_level(tokens);
        break;
      case K::kReplace:
        replace(tokens, s.pattern, s.content);
        break;
      case K::kByteFallback:
        byte_fallback(tokens, keep_tail, raw);
        break;
      case K::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case K::kStrip:
        strip(tokens, s);
        break;
      case K::kMetaspace:
        metaspace(tokens, s);
        break;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && !model.has_decoder) out += ' ';
    out += tokens[i];
  }
  return out;
}

std::vector<std::string> token_byte_table(const Model& model) {
  const bool has_fallback =
      std::any_of(model.decoders.begin(), model.decoders.end(),
                  [](const DecStep& s) { return s.kind == DecStep::Kind::kByteFallback; });
  // A token's bytes in the middle of a text: what it adds after an ordinary first token, so that
  // decoders that treat the first token apart (a stripped leading space) do not change it.
  TokenId anchor = -1;
  for (std::string_view candidate : {"a", "\u2581a", "x"}) {
    if (auto id = model.bpe.token_to_id.lookup(candidate)) {
      anchor = *id;
      break;
    }
  }
  std::string head;
  if (anchor >= 0) head = decode_tokens(model, std::span(&anchor, 1), false, true);
  std::vector<std::string> out(model.vocab_size);
  for (std::size_t i = 0; i < model.vocab_size; ++i) {
    const auto id = static_cast<TokenId>(i);
    auto added = model.added_by_id.find(id);
    if (added != model.added_by_id.end()) {
      const AddedToken& a = model.added[added->second];
      if (!a.special) out[i] = a.content;
      continue;
    }
    if (i >= model.bpe.id_to_token.size() || model.bpe.id_to_token[i].empty()) continue;
    if (has_fallback) {
      int b = fallback_byte(model.bpe.id_to_token[i]);
      if (b >= 0) {
        out[i] = std::string(1, static_cast<char>(b));
        continue;
      }
    }
    if (anchor >= 0) {
      const TokenId pair[2] = {anchor, id};
      std::string both = decode_tokens(model, pair, false, true);
      if (both.starts_with(head)) {
        out[i] = both.substr(head.size());
        continue;
      }
    }
    out[i] = decode_tokens(model, std::span(&id, 1), false, true);
  }
  return out;
}

}  // namespace recur::tokenizer::detail
