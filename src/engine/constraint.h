// Constrained decoding on the engine thread: which tokens a sequence may sample next under its
// grammar (structured outputs, forced tool calls), and its position in it. On a thinking model
// the grammar governs the answer: the reasoning block before it stays free.
#pragma once

#include <memory>
#include <optional>
#include <span>

#include "engine/sampler.h"
#include "grammar/matcher.h"

namespace recur::engine {

struct ConstraintSpec {
  std::shared_ptr<grammar::TokenGrammar> grammar;
  // The token that ends a reasoning block (</think>) and the one that may open one as the first
  // generated token (<think>); -1: the template has none.
  TokenId reasoning_open = -1;
  TokenId reasoning_close = -1;
  bool starts_in_reasoning = false;  // the prompt leaves the model inside a reasoning block
};

class Constraint {
 public:
  explicit Constraint(const ConstraintSpec& spec);

  // What the next token may be: inside a reasoning block anything but an end token. The bits
  // stay valid until the next call.
  TokenFilter filter(std::span<const TokenId> stop_ids);
  // Steps over a sampled token: one the filter allowed, or any while free.
  void accept(TokenId id);
  // The grammar's automaton refused to grow past its state limit (grammar/automaton.h): the
  // masks are no longer exact, so the turn must end with an error.
  bool overflowed() const { return spec_.grammar->automaton().overflowed(); }
  const std::string& overflow() const { return spec_.grammar->automaton().overflow(); }
  // The constrained text is whole and nothing may follow it: the turn ends here.
  bool finished() const {
    return phase_ == Phase::kGrammar && matcher_.is_complete() && !matcher_.can_continue();
  }

 private:
  enum class Phase { kFirst, kReasoning, kGrammar };
  ConstraintSpec spec_;
  grammar::Matcher matcher_;
  grammar::TokenGrammar::Mask mask_;  // the last filter's bits, kept alive for the draw
  Phase phase_;
};

}  // namespace recur::engine
