// BPE merge loop, as HF's word.rs: repeatedly merge the adjacent pair with the lowest rank (the
// leftmost on ties). Short words use a rank array rescanned per merge; long ones (SentencePiece
// models see whole sentences) a heap with lazy invalidation.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>

#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace recur::tokenizer::detail {

void MergeMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  int bits = 4;
  while (cap < n * 2) {
    cap *= 2;
    ++bits;
  }
  entries_.assign(cap, Entry{});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  size_ = 0;
}

void MergeMap::insert(TokenId a, TokenId b, Value v) {
  if ((size_ + 1) * 2 > entries_.size()) {
    std::vector<Entry> old = std::move(entries_);
    reserve(std::max<std::size_t>(size_ + 1, old.size()));
    for (const Entry& e : old) {
      if (e.key != kEmpty)
        insert(static_cast<TokenId>(e.key >> 32), static_cast<TokenId>(e.key & 0xFFFFFFFFu),
               e.value);
    }
  }
  std::uint64_t key = make_key(a, b);
  for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
    Entry& e = entries_[i];
    if (e.key == key) {
      e.value = v;
      return;
    }
    if (e.key == kEmpty) {
      e.key = key;
      e.value = v;
      ++size_;
      return;
    }
  }
}

// Word -> ids for words up to kMaxCachedBytes; 16 shards so parallel encodes rarely contend. A
// full shard stops inserting (as HF's cache does) so memory stays bounded.
class WordCache {
 public:
  static constexpr std::size_t kMaxCachedBytes = 64;
  static constexpr std::size_t kShardCapacity = 4096;

  bool lookup(std::string_view word, std::vector<TokenId>& out) {
    Shard& s = shard(word);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(word);
    if (it == s.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void insert(std::string_view word, std::span<const TokenId> ids) {
    Shard& s = shard(word);
    std::lock_guard lock(s.mu);
    if (s.map.size() >= kShardCapacity) return;
    s.map.emplace(std::string(word), std::vector<TokenId>(ids.begin(), ids.end()));
  }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<TokenId>, Hash, std::equal_to<>> map;
  };
  Shard& shard(std::string_view word) {
    std::size_t h =
        word.size() * 31u + (word.empty() ? 0
                                          : static_cast<unsigned char>(word[0]) * 7u +
                                                static_cast<unsigned char>(word.back()));
    return shards_[h % shards_.size()];
  }
  std::array<Shard, 16> shards_;
};

Bpe::Bpe() : cache_(std::make_unique<WordCache>()) {
  byte_ids.fill(-1);
  fallback_ids.fill(-1);
}
Bpe::~Bpe() = default;

void TokenMap::build(const std::vector<std::string>& tokens) {
  tokens_ = &tokens;
  std::size_t cap = 16;
  while (cap < tokens.size() * 2) cap *= 2;
  slots_.assign(cap, -1);
  mask_ = cap - 1;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const std::string& t = tokens[id];
    if (t.empty()) continue;
    std::size_t i = std::hash<std::string_view>{}(t)&mask_;
    while (slots_[i] >= 0 && tokens[static_cast<std::size_t>(slots_[i])] != t) i = (i + 1) & mask_;
    if (slots_[i] < 0) slots_[i] = static_cast<TokenId>(id);  // a duplicate keeps the first id
  }
}

void Bpe::index() {
  token_to_id.build(id_to_token);
  for (std::size_t id = 0; id < id_to_token.size(); ++id) {
    const std::string& t = id_to_token[id];
    if (t.empty()) continue;
    std::size_t n = 0;
    char32_t cp = utf8_decode(t, 0, n);
    if (n == t.size()) char_ids.emplace(cp, static_cast<TokenId>(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = char_ids.find(byte_chars()[b]);
    if (it != char_ids.end()) byte_ids[b] = it->second;
    char name[8];
    static const char* kHex = "0123456789ABCDEF";
    name[0] = '<', name[1] = '0', name[2] = 'x', name[3] = kHex[b >> 4], name[4] = kHex[b & 15];
    name[5] = '>';
    if (auto f = token_to_id.lookup(std::string_view(name, 6))) fallback_ids[b] = *f;
  }
}

void Bpe::initial_symbols(std::string_view word, bool byte_level,
                          std::vector<TokenId>& syms) const {
  bool last_unk = false;
  auto push_unk = [&] {
    if (!unk) return;  // no unk token: HF drops the character
    if (!(fuse_unk && last_unk)) syms.push_back(*unk);
    last_unk = true;
  };
  for (std::size_t pos = 0; pos < word.size();) {
    std::size_t n = 1;
    if (byte_level) {
      TokenId id = byte_ids[static_cast<unsigned char>(word[pos])];
      if (id >= 0) {
        syms.push_back(id);
        last_unk = false;
      } else {
        push_unk();
      }
      pos += n;
      continue;
    }
    char32_t cp = utf8_decode(word, pos, n);
    auto it = char_ids.find(cp);
    if (it != char_ids.end()) {
      syms.push_back(it->second);
      last_unk = false;
    } else if (byte_fallback &&
               std::all_of(word.begin() + pos, word.begin() + pos + n, [&](char c) {
                 return fallback_ids[static_cast<unsigned char>(c)] >= 0;
               })) {
      for (std::size_t i = 0; i < n; ++i)
        syms.push_back(fallback_ids[static_cast<unsigned char>(word[pos + i])]);
      last_unk = false;
    } else {
      push_unk();
    }
    pos += n;
  }
}

void Bpe::merge_small(std::vector<TokenId>& syms) const {
  constexpr std::uint32_t kNone = ~0u;
  std::uint32_t ranks[128];  // ranks[i]: merge rank of (syms[i], syms[i + 1])
  std::size_t n = syms.size();
  auto rank_at = [&](std::size_t i) {
    const MergeMap::Value* v = merges.find(syms[i], syms[i + 1]);
    return v ? v->rank : kNone;
  };
  for (std::size_t i = 0; i + 1 < n; ++i) ranks[i] = rank_at(i);
  while (n > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNone) break;
    syms[best] = merges.find(syms[best], syms[best + 1])->new_id;
    std::copy(syms.begin() + best + 2, syms.begin() + n, syms.begin() + best + 1);
    if (best + 2 < n) std::copy(ranks + best + 2, ranks + n - 1, ranks + best + 1);
    --n;
    if (best + 1 < n) ranks[best] = rank_at(best);
    if (best > 0) ranks[best - 1] = rank_at(best - 1);
  }
  syms.resize(n);
}

void Bpe::merge_large(std::vector<TokenId>& syms) const {
  struct Cand {
    std::uint32_t rank, pos;
    TokenId new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const std::size_t n = syms.size();
  std::vector<std::int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  std::vector<Cand> heap;
  heap.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<std::int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    if (i + 1 < n) {
      if (const MergeMap::Value* v = merges.find(syms[i], syms[i + 1])) {
        heap.push_back({v->rank, static_cast<std::uint32_t>(i), v->new_id});
      }
    }
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  auto push = [&](std::int32_t a) {
    std::int32_t b = next[a];
    if (a < 0 || b < 0) return;
    if (const MergeMap::Value* v = merges.find(syms[a], syms[b])) {
      heap.push_back({v->rank, static_cast<std::uint32_t>(a), v->new_id});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Cand top = heap.back();
    heap.pop_back();
    auto a = static_cast<std::int32_t>(top.pos);
    if (!alive[a] || next[a] < 0) continue;
    std::int32_t b = next[a];
    const MergeMap::Value* v = merges.find(syms[a], syms[b]);
    if (v == nullptr || v->new_id != top.new_id) continue;  // stale: the pair changed
    syms[a] = top.new_id;
    alive[b] = false;
    next[a] = next[b];
    if (next[b] >= 0) prev[next[b]] = a;
    if (prev[a] >= 0) push(prev[a]);
    push(a);
  }
  std::size_t out = 0;
  for (std::int32_t i = 0; i >= 0; i = next[i]) syms[out++] = syms[i];
  syms.resize(out);
}

void Bpe::encode_word(std::string_view word, bool byte_level, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  bool cacheable = word.size() <= WordCache::kMaxCachedBytes;
  if (cacheable && cache_->lookup(word, out)) return;
  if (ignore_merges) {
    std::string mapped;
    if (byte_level) {
      for (char c : word) append_utf8(mapped, byte_chars()[static_cast<unsigned char>(c)]);
    }
    if (auto id = token_to_id.lookup(byte_level ? std::string_view(mapped) : word)) {
      out.push_back(*id);
      return;
    }
  }
  thread_local std::vector<TokenId> syms;
  syms.clear();
  initial_symbols(word, byte_level, syms);
  if (syms.size() <= 64) {
    merge_small(syms);
  } else {
    merge_large(syms);
  }
  if (cacheable) cache_->insert(word, syms);
  out.insert(out.end(), syms.begin(), syms.end());
}

}  // namespace recur::tokenizer::detail
