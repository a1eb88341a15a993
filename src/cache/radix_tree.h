// A compressed radix tree over token vectors: each stored token vector ends at a node, edges hold
// runs of tokens. Walking a prompt costs O(prompt length), independent of how many vectors are
// stored. The tree knows nothing about policy: nodes carry pointers to the store's entries.
// Thread-compatible (the owning store locks).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "cache/keys.h"

namespace recur::cache {

struct Entry;  // defined by the store

class RadixTree {
 public:
  struct Node {
    Node* parent = nullptr;
    std::vector<Token> edge;  // tokens from the parent's end to this node's end
    std::int64_t depth = 0;   // tokens from the root to this node's end
    // Keyed by the first token of the child's edge; ordered so that descending to the first child
    // visits token vectors in lexicographic order (a deterministic choice among equal matches).
    std::map<Token, std::unique_ptr<Node>> children;
    std::vector<Entry*> entries;  // entries whose tokens end exactly here
  };

  // Where a walk along a token vector stopped.
  struct Match {
    std::int64_t n_matched = 0;  // tokens of the walked vector found in the tree
    // Every stored vector in this node's subtree shares exactly n_matched tokens with the walked
    // vector, and no stored vector shares more. Null when nothing shares a token.
    Node* subtree = nullptr;
  };

  RadixTree() = default;
  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;
  ~RadixTree();

  // The node where exactly `tokens` ends, created (splitting an edge) when absent. Not the root:
  // tokens must be non-empty.
  Node* insert(TokenSpan tokens);

  // Follows `tokens` from the root and calls visit(node) for every node whose whole path is a
  // prefix of `tokens` (the root excluded), shallowest first.
  template <typename Visit>
  Match walk(TokenSpan tokens, Visit&& visit);

  // Drops `node` if it has no entries and no children, and merges nodes that have no entries and
  // one child, so that every leaf holds an entry. Call after removing entries from `node`.
  void prune(Node* node);

  bool empty() const { return root_.children.empty() && root_.entries.empty(); }
  std::int64_t n_nodes() const { return n_nodes_; }

  // The lexicographically first node with entries in the subtree of `node` (`node` itself first).
  static Node* first_entry_node(Node* node);
  // Whether the path of `a` is a prefix of (or equal to) the path of `b`.
  static bool is_prefix_of(const Node* a, const Node* b);
  // The whole token vector ending at `node`: O(depth), for diagnostics and tests.
  static std::vector<Token> path(const Node* node);
  // Checks the structural invariants (depths, parents, no entry-less leaf or pass-through node);
  // returns the number of entries found. Aborts on a broken invariant. For tests.
  std::int64_t check_invariants() const;

 private:
  Node* split(Node* child, std::size_t at);
  static std::int64_t check_node(const Node* node, bool is_root);

  Node root_;
  std::int64_t n_nodes_ = 0;  // excluding the root
};

template <typename Visit>
RadixTree::Match RadixTree::walk(TokenSpan tokens, Visit&& visit) {
  Node* node = &root_;
  std::size_t pos = 0;
  while (pos < tokens.size()) {
    auto it = node->children.find(tokens[pos]);
    if (it == node->children.end()) break;
    Node* child = it->second.get();
    const std::size_t n = std::min(child->edge.size(), tokens.size() - pos);
    std::size_t k = 1;  // the first token matched through the map key
    while (k < n && child->edge[k] == tokens[pos + k]) ++k;
    pos += k;
    if (k < child->edge.size()) return {static_cast<std::int64_t>(pos), child};
    node = child;
    visit(node);
  }
  return {static_cast<std::int64_t>(pos), node == &root_ ? nullptr : node};
}

}  // namespace recur::cache
