// The grammar as a deterministic automaton over bytes, built lazily: a state is the set of parse
// stacks a pushdown parser could be in (each stack hash-consed, so equal stacks are one id, and
// each set interned, so equal sets are one state), and a transition is computed the first time a
// byte is tried from a state, then read from a table. Inside a JSON string the state repeats at
// every character, so walking the vocabulary's trie costs a table lookup a byte.
// Thread-compatible: one thread steps it (the engine thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"

namespace recur::grammar {

class Automaton {
 public:
  using StateId = std::int32_t;
  static constexpr StateId kDead = 0;  // no stack survives: nothing can follow
  // Bounds past which no new state is made: a grammar ambiguous enough to need more (its sets of
  // stacks multiply, or grow with the text) is refused rather than allowed to take the server's
  // memory and the engine thread's time. A refused transition reads as dead and sets overflowed().
  struct Limits {
    std::size_t states = std::size_t{1} << 16;         // a transition row of 1 KiB each: 64 MiB
    std::size_t stack_entries = std::size_t{1} << 22;  // summed over all states: 16 MiB
    std::size_t nodes = std::size_t{1} << 21;          // stack nodes with their index: ~64 MiB
    std::size_t expansion = std::size_t{1} << 16;      // closure steps of one transition
  };

  explicit Automaton(std::shared_ptr<const Grammar> grammar) : Automaton(std::move(grammar), {}) {}
  Automaton(std::shared_ptr<const Grammar> grammar, Limits limits);

  const Grammar& grammar() const { return *grammar_; }
  StateId start() const { return start_; }

  StateId next(StateId s, std::uint8_t b) {
    const std::size_t i = (static_cast<std::size_t>(s) << 8) | b;
    StateId t = transitions_[i];
    if (t < 0) {
      t = compute(s, b);  // may grow transitions_
      transitions_[i] = t;
    }
    return t;
  }
  StateId walk(StateId s, std::string_view bytes) {
    for (char c : bytes) {
      if (s == kDead) break;
      s = next(s, static_cast<std::uint8_t>(c));
    }
    return s;
  }
  // The bytes so far are a whole sentence (the parser's stack can be empty).
  bool is_complete(StateId s) const { return complete_[static_cast<std::size_t>(s)] != 0; }
  // Some byte can follow.
  bool can_continue(StateId s) const { return continues_[static_cast<std::size_t>(s)] != 0; }

  std::size_t n_states() const { return states_.size(); }
  bool overflowed() const { return !overflow_.empty(); }
  // Which limit was passed, for the error the request ends with; empty while none was.
  const std::string& overflow() const { return overflow_; }
  std::size_t memory_bytes() const;

 private:
  struct Node {
    std::int32_t pos;  // an element index: the top's is a byte element, the others' return points
    std::int32_t parent;  // node id; 0 is the empty stack
  };
  struct SetHash {
    std::size_t operator()(const std::vector<std::int32_t>& v) const;
  };

  std::int32_t node(std::int32_t pos, std::int32_t parent);
  // Every stack reachable from "at element pos, then parent" without consuming a byte.
  // Returns false when the closure passes limits_.expansion.
  bool expand(std::int32_t pos, std::int32_t parent, std::vector<std::int32_t>& out);
  StateId intern(std::vector<std::int32_t> stacks);
  std::string closure_overflow() const;
  StateId compute(StateId s, std::uint8_t b);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, std::int32_t> node_ids_;
  std::vector<std::vector<std::int32_t>> states_;  // sorted stack ids
  std::unordered_map<std::vector<std::int32_t>, StateId, SetHash> state_ids_;
  std::vector<StateId> transitions_;  // 256 per state, -1 until computed
  std::vector<std::uint8_t> complete_, continues_;
  std::vector<std::pair<std::int32_t, std::int32_t>> work_;  // expand's worklist
  // (element, parent) pairs already expanded for the transition being computed: two paths
  // through nullable rules that meet would otherwise each go on (2^n for n nested ones).
  std::unordered_set<std::uint64_t> seen_;
  Limits limits_;
  std::size_t stack_entries_ = 0;
  StateId start_ = kDead;
  std::string overflow_;
};

}  // namespace recur::grammar
