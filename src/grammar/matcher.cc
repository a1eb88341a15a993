#include "grammar/matcher.h"

namespace recur::grammar {

namespace {
// Masks are 31 KiB each on a 248k vocabulary (500 of them here, more than a schema visits); past
// this many bytes the cache starts over. The server keeps 16 grammars: 256 MiB at most.
constexpr std::size_t kMaskCacheBytes = std::size_t{16} << 20;
}  // namespace

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar,
                           std::shared_ptr<const Vocabulary> vocab)
    : automaton_(std::move(grammar)), vocab_(std::move(vocab)) {}

TokenGrammar::Mask TokenGrammar::mask(Automaton::StateId s) {
  auto it = masks_.find(s);
  if (it != masks_.end()) return it->second;
  if ((masks_.size() + 1) * vocab_->mask_words() * 8 > kMaskCacheBytes) masks_.clear();
  auto bits = std::make_shared<std::vector<std::uint64_t>>();
  compute_mask(s, *bits);
  ++masks_computed_;
  masks_.emplace(s, bits);
  return bits;
}

void TokenGrammar::compute_mask(Automaton::StateId s, std::vector<std::uint64_t>& bits) {
  bits.assign(vocab_->mask_words(), 0);
  const Vocabulary::Trie& t = vocab_->trie();
  walk_.assign(t.max_depth + 1, Automaton::kDead);
  walk_[0] = s;
  if (s == Automaton::kDead) return;
  const auto n = static_cast<std::int32_t>(t.byte.size());
  const std::uint8_t* byte = t.byte.data();
  const std::uint16_t* depth = t.depth.data();
  const std::int32_t* end = t.end.data();
  const std::int32_t* tokens = t.tokens.data();
  const std::int32_t* ids = t.token_ids.data();
  Automaton::StateId* st = walk_.data();
  for (std::int32_t i = 0; i < n;) {
    const std::uint16_t d = depth[i];
    const Automaton::StateId next = automaton_.next(st[d - 1], byte[i]);
    if (next == Automaton::kDead) {
      i = end[i];
      continue;
    }
    st[d] = next;
    for (std::int32_t k = tokens[i]; k < tokens[i + 1]; ++k) {
      const auto id = static_cast<std::uint32_t>(ids[k]);
      bits[id >> 6] |= 1ull << (id & 63);
    }
    ++i;
  }
}

std::size_t TokenGrammar::memory_bytes() const {
  return automaton_.memory_bytes() + masks_.size() * vocab_->mask_words() * 8;
}

Matcher::Matcher(std::shared_ptr<TokenGrammar> grammar)
    : grammar_(std::move(grammar)), state_(grammar_->automaton().start()) {}

bool Matcher::allows(std::int32_t token) {
  if (token < 0 || static_cast<std::size_t>(token) >= grammar_->vocabulary().size()) return false;
  const std::string& b = grammar_->vocabulary().bytes(token);
  return !b.empty() && grammar_->automaton().walk(state_, b) != Automaton::kDead;
}

bool Matcher::accept(std::int32_t token) {
  if (token < 0 || static_cast<std::size_t>(token) >= grammar_->vocabulary().size()) return false;
  const std::string& b = grammar_->vocabulary().bytes(token);
  if (b.empty()) return false;
  Automaton::StateId next = grammar_->automaton().walk(state_, b);
  if (next == Automaton::kDead) return false;
  state_ = next;
  return true;
}

}  // namespace recur::grammar
