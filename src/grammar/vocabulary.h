// The model's vocabulary as a byte trie, for computing which tokens a grammar allows: tokens that
// share a prefix share the automaton steps over it, and a dead prefix skips its whole subtree.
// Immutable after construction; shared by every constrained sequence of a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recur::grammar {

class Vocabulary {
 public:
  // bytes[id]: what token id adds to the text in the middle of a sequence. Empty: a grammar never
  // allows it (special tokens, end tokens, tokens that add nothing).
  explicit Vocabulary(std::vector<std::string> bytes);

  std::size_t size() const { return bytes_.size(); }
  const std::string& bytes(std::int32_t id) const { return bytes_[static_cast<std::size_t>(id)]; }
  std::size_t mask_words() const { return (bytes_.size() + 63) / 64; }

  // The trie in preorder: node i holds one byte at depth depth[i] (1 for the first byte); its
  // subtree is [i, end[i]); the tokens whose bytes end there are token_ids[tokens[i], tokens[i+1]).
  struct Trie {
    std::vector<std::uint8_t> byte;
    std::vector<std::uint16_t> depth;
    std::vector<std::int32_t> end;
    std::vector<std::int32_t> tokens;
    std::vector<std::int32_t> token_ids;
    std::size_t max_depth = 0;
  };
  const Trie& trie() const { return trie_; }

 private:
  std::vector<std::string> bytes_;
  Trie trie_;
};

}  // namespace recur::grammar
