// Radix tree insertion, splitting, pruning and invariant checks.
#include "cache/radix_tree.h"

#include <algorithm>

#include "util/check.h"

namespace recur::cache {

RadixTree::~RadixTree() {
  // Tear down iteratively: a long chain of nested unique_ptrs would recurse once per node.
  std::vector<std::unique_ptr<Node>> stack;
  for (auto& [token, child] : root_.children) stack.push_back(std::move(child));
  while (!stack.empty()) {
    std::unique_ptr<Node> node = std::move(stack.back());
    stack.pop_back();
    for (auto& [token, child] : node->children) stack.push_back(std::move(child));
  }
}

RadixTree::Node* RadixTree::split(Node* child, std::size_t at) {
  Node* parent = child->parent;
  auto owned = std::move(parent->children[child->edge.front()]);
  auto mid = std::make_unique<Node>();
  mid->parent = parent;
  mid->edge.assign(child->edge.begin(), child->edge.begin() + static_cast<std::ptrdiff_t>(at));
  mid->depth = parent->depth + static_cast<std::int64_t>(at);
  child->edge.erase(child->edge.begin(), child->edge.begin() + static_cast<std::ptrdiff_t>(at));
  child->parent = mid.get();
  mid->children.emplace(child->edge.front(), std::move(owned));
  Node* result = mid.get();
  parent->children[result->edge.front()] = std::move(mid);
  ++n_nodes_;
  return result;
}

RadixTree::Node* RadixTree::insert(TokenSpan tokens) {
  RECUR_CHECK(!tokens.empty());
  Node* node = &root_;
  std::size_t pos = 0;
  while (pos < tokens.size()) {
    auto it = node->children.find(tokens[pos]);
    if (it == node->children.end()) {
      auto leaf = std::make_unique<Node>();
      leaf->parent = node;
      leaf->edge.assign(tokens.begin() + static_cast<std::ptrdiff_t>(pos), tokens.end());
      leaf->depth = static_cast<std::int64_t>(tokens.size());
      Node* result = leaf.get();
      node->children.emplace(tokens[pos], std::move(leaf));
      ++n_nodes_;
      return result;
    }
    Node* child = it->second.get();
    const std::size_t n = std::min(child->edge.size(), tokens.size() - pos);
    std::size_t k = 1;
    while (k < n && child->edge[k] == tokens[pos + k]) ++k;
    pos += k;
    node = k < child->edge.size() ? split(child, k) : child;
  }
  return node;
}

void RadixTree::prune(Node* node) {
  while (node != &root_ && node->entries.empty()) {
    Node* parent = node->parent;
    const Token key = node->edge.front();
    if (node->children.empty()) {
      parent->children.erase(key);  // destroys node
      --n_nodes_;
      node = parent;
      continue;
    }
    if (node->children.size() == 1) {
      auto only = std::move(node->children.begin()->second);
      only->edge.insert(only->edge.begin(), node->edge.begin(), node->edge.end());
      only->parent = parent;
      parent->children[key] = std::move(only);  // destroys node
      --n_nodes_;
    }
    return;
  }
}

RadixTree::Node* RadixTree::first_entry_node(Node* node) {
  while (node->entries.empty()) {
    RECUR_CHECK(!node->children.empty());
    node = node->children.begin()->second.get();
  }
  return node;
}

bool RadixTree::is_prefix_of(const Node* a, const Node* b) {
  while (b != nullptr && b->depth > a->depth) b = b->parent;
  return b == a;
}

std::vector<Token> RadixTree::path(const Node* node) {
  std::vector<Token> tokens(static_cast<std::size_t>(node->depth));
  for (; node->parent != nullptr; node = node->parent) {
    std::copy(node->edge.begin(), node->edge.end(),
              tokens.begin() + (node->depth - static_cast<std::int64_t>(node->edge.size())));
  }
  return tokens;
}

std::int64_t RadixTree::check_node(const Node* node, bool is_root) {
  if (!is_root) {
    RECUR_CHECK(!node->edge.empty());
    RECUR_CHECK(node->depth == node->parent->depth + static_cast<std::int64_t>(node->edge.size()));
    RECUR_CHECK_MSG(!node->entries.empty() || node->children.size() >= 2,
                    "a node without entries must branch");
  }
  std::int64_t n_entries = static_cast<std::int64_t>(node->entries.size());
  for (const auto& [token, child] : node->children) {
    RECUR_CHECK(child->parent == node);
    RECUR_CHECK(child->edge.front() == token);
    n_entries += check_node(child.get(), false);
  }
  return n_entries;
}

std::int64_t RadixTree::check_invariants() const { return check_node(&root_, true); }

}  // namespace recur::cache
