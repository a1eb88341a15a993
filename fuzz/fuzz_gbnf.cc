// libFuzzer target: the GBNF parser and the automaton. The input is a grammar, optionally followed
// by a NUL byte and a text; a grammar that parses is walked over the text byte by byte (and over
// its own source, a text rich in the grammar's literals). Every input must end with a grammar or
// an error, never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/automaton.h"
#include "grammar/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view source = input, text = input;
  if (std::size_t nul = input.find('\0'); nul != std::string_view::npos) {
    source = input.substr(0, nul);
    text = input.substr(nul + 1);
  }
  auto g = recur::grammar::parse_gbnf(source);
  if (!g.is_ok()) return 0;
  // The server's limits scaled down 16x, so that a grammar whose stacks multiply reaches them
  // within the time an input may take under the sanitizers.
  recur::grammar::Automaton::Limits limits;
  limits.states >>= 4;
  limits.stack_entries >>= 4;
  limits.nodes >>= 4;
  limits.expansion >>= 4;
  recur::grammar::Automaton a(*g, limits);
  auto s = a.start();
  for (char c : text) {
    s = a.next(s, static_cast<std::uint8_t>(c));
    if (s == recur::grammar::Automaton::kDead) break;
    (void)a.is_complete(s);
  }
  (void)recur::grammar::prefix_rules(source, "p-");
  return 0;
}
