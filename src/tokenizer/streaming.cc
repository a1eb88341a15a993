// StreamingDetokenizer: incremental decode by differences of a small window (so decoders that
// treat the first token specially still agree with a full decode), held back at unfinished
// characters and at text that may be the start of a stop string.
#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace recur::tokenizer {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer,
                                           std::vector<std::string> stop_strings, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

bool is_byte_token(std::string_view t) {
  return t.size() == 6 && t.substr(0, 3) == "<0x" && t[5] == '>';
}

char token_byte(std::string_view t) {
  auto hex = [](char c) { return c <= '9' ? c - '0' : c - 'A' + 10; };
  return static_cast<char>(hex(t[3]) * 16 + hex(t[4]));
}

// A run of byte-fallback tokens that no later byte can make valid UTF-8 (a stray continuation
// byte, a character cut short): the decoder turns each of its tokens into U+FFFD, whatever follows.
bool doomed(std::string_view run) {
  return !detail::utf8_is_valid(run.substr(0, run.size() - detail::utf8_incomplete_tail(run)));
}

}  // namespace

std::string StreamingDetokenizer::push(TokenId id) {
  bytes_.clear();
  if (stopped() || finished_) return {};
  ids_.push_back(id);
  // A run of byte-fallback tokens decodes as a whole: one invalid byte turns every byte of the
  // run into U+FFFD ("<0x32><0x9E>" is two, not "2" and one), so nothing of a run is final until
  // a token the decoder sees ends it, or until the run can no longer be valid: then each of its
  // tokens, so far and to come, is one U+FFFD. Unknown ids and skipped specials never reach the
  // decoder.
  std::string_view text = tokenizer_->token_text(id);
  bool newly_doomed = false;
  if (!text.empty() && !(skip_special_ && tokenizer_->is_special(id))) {
    const bool byte_token = is_byte_token(text);
    if (byte_token) {
      if (!in_byte_run_) run_.clear();
      run_ += token_byte(text);
      if (in_byte_run_ && run_doomed_) {
        // The window keeps the whole run, so the decode that ends the run agrees.
        prefix_n_ = ids_.size();
        return release(std::string(kReplacement), std::string(1, run_.back()), /*final=*/false);
      }
      newly_doomed = doomed(run_);
    }
    in_byte_run_ = byte_token;
    run_doomed_ = byte_token && newly_doomed;
  }
  if (in_byte_run_ && !newly_doomed) return {};
  std::span<const TokenId> all(ids_);
  std::string prefix = tokenizer_->decode_bytes(all.first(prefix_n_), skip_special_);
  std::string full = tokenizer_->decode_bytes(all, skip_special_);
  if (full.size() <= prefix.size() || detail::utf8_incomplete_tail(full) > 0) return {};
  std::string fresh = detail::utf8_repair(std::string_view(full).substr(prefix.size()));
  std::string raw = fresh.find(kReplacement) == std::string::npos ? std::string() : fresh_raw();
  if (newly_doomed) {
    prefix_n_ = ids_.size();
  } else {
    keep_context();
  }
  return release(std::move(fresh), std::move(raw), /*final=*/false);
}

// The bytes behind the text of ids_ after prefix_n_: byte-fallback tokens as their bytes,
// nothing repaired.
std::string StreamingDetokenizer::fresh_raw() const {
  std::span<const TokenId> all(ids_);
  std::string prefix = tokenizer_->decode_raw(all.first(prefix_n_), skip_special_);
  std::string full = tokenizer_->decode_raw(all, skip_special_);
  return full.size() > prefix.size() ? full.substr(prefix.size()) : std::string();
}

// The window keeps the last emitted tokens as context, back to a token that starts a character:
// one that is not a byte-fallback token ("<0xAB>"), or one whose byte is not a continuation byte.
// A run of byte tokens decodes as a whole, so the window must not start inside a character.
void StreamingDetokenizer::keep_context() {
  std::size_t keep = 1;
  while (keep < ids_.size()) {
    std::string_view t = tokenizer_->token_text(ids_[ids_.size() - keep]);
    bool byte_token = is_byte_token(t);
    // "<0x8.>" .. "<0xB.>" are continuation bytes.
    if (!byte_token || !(t[3] == '8' || t[3] == '9' || t[3] == 'A' || t[3] == 'B')) break;
    ++keep;
  }
  ids_.erase(ids_.begin(), ids_.end() - static_cast<std::ptrdiff_t>(keep));
  prefix_n_ = keep;
}

std::string StreamingDetokenizer::finish() {
  bytes_.clear();
  if (stopped() || finished_) return {};
  finished_ = true;
  std::span<const TokenId> all(ids_);
  // The final decode, as a full decode ends: an unfinished byte-fallback run is one U+FFFD per
  // byte token. The window starts after a complete character, so the decodes share the prefix.
  std::string prefix = tokenizer_->decode(all.first(prefix_n_), skip_special_);
  std::string full = tokenizer_->decode(all, skip_special_);
  std::string fresh;
  if (full.size() > prefix.size()) fresh = full.substr(prefix.size());
  std::string raw = fresh.find(kReplacement) == std::string::npos ? std::string() : fresh_raw();
  return release(std::move(fresh), std::move(raw), /*final=*/true);
}

std::string StreamingDetokenizer::release(std::string text, std::string raw, bool final) {
  held_raw_ += raw.empty() ? text : raw;
  held_ += text;
  // What leaves is held_ up to `cut`, with the bytes behind it.
  auto out = [&](std::size_t cut, std::size_t raw_cut) {
    std::string released = held_.substr(0, cut);
    if (std::string_view(held_raw_).substr(0, raw_cut) != released) {
      bytes_ = held_raw_.substr(0, raw_cut);
    }
    return released;
  };
  std::size_t best = std::string::npos;
  for (std::size_t i = 0; i < stops_.size(); ++i) {
    std::size_t pos = held_.find(stops_[i]);
    if (pos < best) {
      best = pos;
      stop_index_ = i;
    }
  }
  if (best != std::string::npos) {
    std::string released = out(best, detail::raw_offset(held_, held_raw_, best));
    held_.clear();
    held_raw_.clear();
    return released;
  }
  std::size_t keep = 0;
  if (!final) {
    // The longest end of the text that a stop string starts with stays held.
    for (const std::string& s : stops_) {
      for (std::size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
        if (std::string_view(held_).substr(held_.size() - k) == std::string_view(s).substr(0, k)) {
          keep = k;
          break;
        }
      }
    }
  }
  const std::size_t cut = held_.size() - keep;
  const std::size_t raw_cut =
      keep == 0 ? held_raw_.size() : detail::raw_offset(held_, held_raw_, cut);
  std::string released = out(cut, raw_cut);
  held_.erase(0, cut);
  held_raw_.erase(0, raw_cut);
  return released;
}

}  // namespace recur::tokenizer
