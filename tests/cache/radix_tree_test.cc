// The radix tree alone: shape after inserts and splits, walks, lexicographic choice, pruning.
#include "cache/radix_tree.h"

#include <gtest/gtest.h>

#include "cache/store.h"
#include "test_snapshot.h"

namespace recur::cache {
namespace {

using testing::iota_tokens;
using V = std::vector<Token>;

// Inserts `tokens` and hangs `entry` on its node, as a store would.
RadixTree::Node* put(RadixTree& tree, const V& tokens, Entry& entry) {
  RadixTree::Node* node = tree.insert(tokens);
  node->entries.push_back(&entry);
  entry.node = node;
  return node;
}

void take(RadixTree& tree, Entry& entry) {
  auto& v = entry.node->entries;
  v.erase(std::find(v.begin(), v.end(), &entry));
  tree.prune(entry.node);
}

std::vector<std::int64_t> walk_depths(RadixTree& tree, const V& tokens,
                                      RadixTree::Match* match = nullptr) {
  std::vector<std::int64_t> depths;
  RadixTree::Match m = tree.walk(tokens, [&](RadixTree::Node* n) { depths.push_back(n->depth); });
  if (match != nullptr) *match = m;
  return depths;
}

TEST(RadixTree, SplitsEdgesAndWalksOnlyFullyMatchedNodes) {
  RadixTree tree;
  Entry a, b, c;
  put(tree, {1, 2, 3, 4, 5}, a);
  EXPECT_EQ(tree.n_nodes(), 1);
  put(tree, {1, 2, 3, 9}, b);  // splits the edge after 3
  EXPECT_EQ(tree.n_nodes(), 3);
  put(tree, {1, 2}, c);  // splits again: a node with an entry and one child
  EXPECT_EQ(tree.n_nodes(), 4);
  EXPECT_EQ(tree.check_invariants(), 3);
  EXPECT_EQ(RadixTree::path(a.node), (V{1, 2, 3, 4, 5}));
  EXPECT_EQ(RadixTree::path(b.node), (V{1, 2, 3, 9}));

  RadixTree::Match m;
  EXPECT_EQ(walk_depths(tree, {1, 2, 3, 4, 5, 6, 7}, &m), (std::vector<std::int64_t>{2, 3, 5}));
  EXPECT_EQ(m.n_matched, 5);
  EXPECT_EQ(m.subtree, a.node);
  EXPECT_EQ(walk_depths(tree, {1, 2, 3, 4, 7}, &m), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(m.n_matched, 4);  // stopped inside the edge to a's node
  EXPECT_EQ(m.subtree, a.node);
  EXPECT_EQ(walk_depths(tree, {1, 2, 7}, &m), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(m.n_matched, 2);
  EXPECT_EQ(m.subtree, c.node);
  walk_depths(tree, {7, 1}, &m);
  EXPECT_EQ(m.n_matched, 0);
  EXPECT_EQ(m.subtree, nullptr);
  walk_depths(tree, {}, &m);
  EXPECT_EQ(m.subtree, nullptr);
}

TEST(RadixTree, FirstEntryNodeIsLexicographicallyFirst) {
  RadixTree tree;
  Entry a, b, c;
  put(tree, {5, 9, 9}, a);
  put(tree, {5, 3, 1, 1}, b);
  put(tree, {5, 3, 1, 0, 4}, c);
  RadixTree::Match m = tree.walk(V{5, 7}, [](RadixTree::Node*) {});
  EXPECT_EQ(m.n_matched, 1);
  EXPECT_EQ(RadixTree::first_entry_node(m.subtree), c.node);
  Entry d;
  put(tree, {5, 3}, d);  // a prefix of b and c comes first
  EXPECT_EQ(RadixTree::first_entry_node(m.subtree), d.node);
}

TEST(RadixTree, PrefixRelationFollowsPaths) {
  RadixTree tree;
  Entry a, b, c;
  put(tree, {1, 2, 3}, a);
  put(tree, {1, 2, 3, 4}, b);
  put(tree, {1, 2, 5}, c);
  EXPECT_TRUE(RadixTree::is_prefix_of(a.node, b.node));
  EXPECT_TRUE(RadixTree::is_prefix_of(a.node, a.node));
  EXPECT_FALSE(RadixTree::is_prefix_of(b.node, a.node));
  EXPECT_FALSE(RadixTree::is_prefix_of(c.node, b.node));
  EXPECT_FALSE(RadixTree::is_prefix_of(a.node, c.node));
}

TEST(RadixTree, PruneRemovesLeavesAndMergesPassThroughNodes) {
  RadixTree tree;
  Entry a, b, c;
  put(tree, {1, 2, 3, 4}, a);
  put(tree, {1, 2, 3, 5}, b);
  put(tree, {1, 2}, c);
  EXPECT_EQ(tree.n_nodes(), 4);
  take(tree, b);  // b's leaf goes, {1,2,3} no longer branches: merged into a's node
  EXPECT_EQ(tree.n_nodes(), 2);
  EXPECT_EQ(tree.check_invariants(), 2);
  EXPECT_EQ(RadixTree::path(a.node), (V{1, 2, 3, 4}));
  take(tree, c);  // {1,2} has one child and no entry: merged
  EXPECT_EQ(tree.n_nodes(), 1);
  EXPECT_EQ(a.node->edge, (V{1, 2, 3, 4}));
  take(tree, a);
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.n_nodes(), 0);
}

TEST(RadixTree, LongVectorsShareOneNodePerBranch) {
  RadixTree tree;
  std::vector<Entry> entries(100);
  const V base = iota_tokens(5000);
  for (int i = 0; i < 100; ++i) {
    V t = base;
    t.push_back(100000 + i);
    put(tree, t, entries[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(tree.n_nodes(), 101);  // the shared 5000-token run once, one leaf each
  EXPECT_EQ(tree.check_invariants(), 100);
}

}  // namespace
}  // namespace recur::cache
