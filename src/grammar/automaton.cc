#include "grammar/automaton.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/check.h"

namespace recur::grammar {

std::size_t Automaton::SetHash::operator()(const std::vector<std::int32_t>& v) const {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (std::int32_t x : v) {
    h ^= static_cast<std::uint64_t>(x) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  }
  return static_cast<std::size_t>(h);
}

Automaton::Automaton(std::shared_ptr<const Grammar> grammar, Limits limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  nodes_.push_back({-1, 0});  // the empty stack
  intern({});                 // kDead
  std::vector<std::int32_t> stacks;
  seen_.clear();
  bool ok = true;
  for (std::int32_t alt : grammar_->rules[static_cast<std::size_t>(grammar_->root)].alternatives) {
    ok = ok && expand(alt, 0, stacks);
  }
  if (ok) {
    start_ = intern(std::move(stacks));
  } else {
    overflow_ = closure_overflow();
  }
}

std::int32_t Automaton::node(std::int32_t pos, std::int32_t parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pos)) << 32) |
                            static_cast<std::uint32_t>(parent);
  auto [it, inserted] = node_ids_.emplace(key, static_cast<std::int32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({pos, parent});
  return it->second;
}

bool Automaton::expand(std::int32_t pos, std::int32_t parent, std::vector<std::int32_t>& out) {
  const auto& el = grammar_->elements;
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    auto [p, par] = work_.back();
    work_.pop_back();
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(p)) << 32) |
                              static_cast<std::uint32_t>(par);
    if (!seen_.insert(key).second) continue;
    if (seen_.size() > limits_.expansion || nodes_.size() >= limits_.nodes) return false;
    const Grammar::Element& e = el[static_cast<std::size_t>(p)];
    if (e.is_end()) {
      if (par == 0) {
        out.push_back(0);
      } else {
        const Node n = nodes_[static_cast<std::size_t>(par)];
        work_.push_back({n.pos, n.parent});
      }
    } else if (e.is_bytes()) {
      out.push_back(node(p, par));
    } else {
      // A reference in tail position pushes no return point: right recursion (x*) stays flat.
      const std::int32_t cont =
          el[static_cast<std::size_t>(p) + 1].is_end() ? par : node(p + 1, par);
      for (std::int32_t alt : grammar_->rules[static_cast<std::size_t>(e.rule)].alternatives) {
        work_.push_back({alt, cont});
      }
    }
  }
  return true;
}

std::string Automaton::closure_overflow() const {
  if (nodes_.size() >= limits_.nodes) {
    return fmt::format("its automaton passed {} stack nodes", limits_.nodes);
  }
  return fmt::format("one byte's step passed {} parse positions", limits_.expansion);
}

Automaton::StateId Automaton::intern(std::vector<std::int32_t> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  auto it = state_ids_.find(stacks);
  if (it != state_ids_.end()) return it->second;
  if (states_.size() >= limits_.states) {
    overflow_ = fmt::format("its automaton passed {} states", limits_.states);
    return kDead;
  }
  if (stack_entries_ + stacks.size() > limits_.stack_entries) {
    overflow_ = fmt::format("its automaton's parse stacks passed {} in all", limits_.stack_entries);
    return kDead;
  }
  stack_entries_ += stacks.size();
  const auto id = static_cast<StateId>(states_.size());
  const bool complete = !stacks.empty() && stacks.front() == 0;
  complete_.push_back(complete ? 1 : 0);
  continues_.push_back(stacks.size() > (complete ? 1u : 0u) ? 1 : 0);
  state_ids_.emplace(stacks, id);
  states_.push_back(std::move(stacks));
  transitions_.resize(states_.size() * 256, -1);
  return id;
}

Automaton::StateId Automaton::compute(StateId s, std::uint8_t b) {
  if (overflowed()) return kDead;  // a grammar past its limits stays refused
  std::vector<std::int32_t> out;
  const std::vector<std::int32_t> stacks = states_[static_cast<std::size_t>(s)];
  seen_.clear();
  for (std::int32_t id : stacks) {
    if (id == 0) continue;
    const Node n = nodes_[static_cast<std::size_t>(id)];
    if (grammar_->elements[static_cast<std::size_t>(n.pos)].accepts(b) &&
        !expand(n.pos + 1, n.parent, out)) {
      overflow_ = closure_overflow();
      return kDead;
    }
  }
  return intern(std::move(out));
}

std::size_t Automaton::memory_bytes() const {
  std::size_t n = nodes_.size() * sizeof(Node) + node_ids_.size() * 32 +
                  transitions_.size() * sizeof(StateId) + states_.size() * 64;
  for (const auto& s : states_) n += s.size() * sizeof(std::int32_t);
  return n;
}

bool accepts(const Grammar& grammar, std::string_view text) {
  Automaton a(std::shared_ptr<const Grammar>(&grammar, [](const Grammar*) {}));
  return a.is_complete(a.walk(a.start(), text));
}

bool accepts_prefix(const Grammar& grammar, std::string_view text) {
  Automaton a(std::shared_ptr<const Grammar>(&grammar, [](const Grammar*) {}));
  return a.walk(a.start(), text) != Automaton::kDead;
}

}  // namespace recur::grammar
