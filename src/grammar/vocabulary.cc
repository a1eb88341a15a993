#include "grammar/vocabulary.h"

#include <algorithm>
#include <numeric>

namespace recur::grammar {

namespace {
// Longer tokens are left out of the trie (and never allowed): depth is 16-bit and no real
// vocabulary comes near.
constexpr std::size_t kMaxTokenBytes = 1024;
}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  std::vector<std::int32_t> order;
  for (std::size_t i = 0; i < bytes_.size(); ++i) {
    if (!bytes_[i].empty() && bytes_[i].size() <= kMaxTokenBytes) {
      order.push_back(static_cast<std::int32_t>(i));
    }
  }
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const std::string& x = bytes_[static_cast<std::size_t>(a)];
    const std::string& y = bytes_[static_cast<std::size_t>(b)];
    return x < y || (x == y && a < b);
  });
  Trie& t = trie_;
  std::vector<std::int32_t> path;  // node of each depth on the current path
  const std::string* prev = nullptr;
  for (std::int32_t id : order) {
    const std::string& s = bytes_[static_cast<std::size_t>(id)];
    std::size_t common = 0;
    if (prev != nullptr) {
      const std::size_t n = std::min(prev->size(), s.size());
      while (common < n && (*prev)[common] == s[common]) ++common;
    }
    while (path.size() > common) {
      t.end[static_cast<std::size_t>(path.back())] = static_cast<std::int32_t>(t.byte.size());
      path.pop_back();
    }
    for (std::size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<std::int32_t>(t.byte.size()));
      t.byte.push_back(static_cast<std::uint8_t>(s[d]));
      t.depth.push_back(static_cast<std::uint16_t>(d + 1));
      t.end.push_back(0);
      t.tokens.push_back(static_cast<std::int32_t>(t.token_ids.size()));
    }
    // Tokens are added in preorder, so a node's tokens are contiguous and follow its own index.
    t.token_ids.push_back(id);
    t.max_depth = std::max(t.max_depth, s.size());
    prev = &s;
  }
  while (!path.empty()) {
    t.end[static_cast<std::size_t>(path.back())] = static_cast<std::int32_t>(t.byte.size());
    path.pop_back();
  }
  t.tokens.push_back(static_cast<std::int32_t>(t.token_ids.size()));
}

}  // namespace recur::grammar
