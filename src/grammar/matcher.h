// Token-level constrained decoding: a grammar bound to a model's vocabulary (TokenGrammar, shared
// by every sequence under the same grammar) and the per-sequence position in it (Matcher).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/vocabulary.h"

namespace recur::grammar {

// The automaton and the token masks of the states met so far, kept across requests of the same
// grammar: a schema's second request finds most masks computed. Built on any thread, then used by
// the engine thread only.
class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab);

  Automaton& automaton() { return automaton_; }
  const Vocabulary& vocabulary() const { return *vocab_; }

  // One bit per token id, set for the tokens whose bytes keep the text a prefix of a sentence
  // from state s. Shared: it stays valid for its holder when the cache starts over.
  using Mask = std::shared_ptr<const std::vector<std::uint64_t>>;
  Mask mask(Automaton::StateId s);
  std::size_t memory_bytes() const;
  std::uint64_t masks_computed() const { return masks_computed_; }

 private:
  void compute_mask(Automaton::StateId s, std::vector<std::uint64_t>& bits);

  Automaton automaton_;
  std::shared_ptr<const Vocabulary> vocab_;
  std::unordered_map<Automaton::StateId, Mask> masks_;
  std::vector<Automaton::StateId> walk_;  // state per trie depth
  std::uint64_t masks_computed_ = 0;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<TokenGrammar> grammar);

  TokenGrammar::Mask allowed() { return grammar_->mask(state_); }
  bool allows(std::int32_t token);
  // Steps over the token's bytes. false (and no change) when the grammar does not allow it.
  bool accept(std::int32_t token);
  // The text so far is a whole sentence: an end token may come now.
  bool is_complete() const { return grammar_->automaton().is_complete(state_); }
  bool can_continue() const { return grammar_->automaton().can_continue(state_); }

 private:
  std::shared_ptr<TokenGrammar> grammar_;
  Automaton::StateId state_;
};

}  // namespace recur::grammar
