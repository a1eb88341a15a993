// The BPE model: vocabulary, merge ranks over id pairs, and the merge loop with a word cache.
// Immutable after load except the cache, which is internally locked (sharded mutexes).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace recur::tokenizer::detail {

// Open-addressing map from a token pair (a << 32 | b) to its merge rank and the merged token.
class MergeMap {
 public:
  struct Value {
    std::uint32_t rank;
    TokenId new_id;
  };
  void reserve(std::size_t n);
  void insert(TokenId a, TokenId b, Value v);  // a later duplicate wins, as in HF's HashMap
  const Value* find(TokenId a, TokenId b) const {
    if (entries_.empty()) return nullptr;  // a vocabulary without merges
    std::uint64_t key = make_key(a, b);
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.key == key) return &e.value;
      if (e.key == kEmpty) return nullptr;
    }
  }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Entry {
    std::uint64_t key = kEmpty;
    Value value{};
  };
  static std::uint64_t make_key(TokenId a, TokenId b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

class WordCache;

// Open-addressing map from a vocabulary string to its id, over the strings of id_to_token.
class TokenMap {
 public:
  void build(const std::vector<std::string>& tokens);
  std::optional<TokenId> lookup(std::string_view token) const {
    if (slots_.empty()) return std::nullopt;
    for (std::size_t i = std::hash<std::string_view>{}(token)&mask_;; i = (i + 1) & mask_) {
      TokenId id = slots_[i];
      if (id < 0) return std::nullopt;
      if ((*tokens_)[static_cast<std::size_t>(id)] == token) return id;
    }
  }

 private:
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<TokenId> slots_;  // ids; -1 marks an empty slot
  std::size_t mask_ = 0;
};

struct Bpe {
  Bpe();
  ~Bpe();
  Bpe(const Bpe&) = delete;
  Bpe& operator=(const Bpe&) = delete;

  // Vocabulary: strings in vocabulary form ("Ġthe"), index = id; unused ids are empty.
  std::vector<std::string> id_to_token;
  TokenMap token_to_id;
  MergeMap merges;
  std::unordered_map<char32_t, TokenId> char_ids;  // single-character tokens
  std::array<TokenId, 256> byte_ids{};             // byte-level: id of byte_chars()[b], or -1
  std::array<TokenId, 256> fallback_ids{};         // "<0xAB>" tokens, or -1
  std::optional<TokenId> unk;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;

  // Builds the lookup tables once id_to_token is filled.
  void index();
  // Appends the ids of one pre-tokenized word (raw bytes when byte_level).
  void encode_word(std::string_view word, bool byte_level, std::vector<TokenId>& out) const;

 private:
  void initial_symbols(std::string_view word, bool byte_level, std::vector<TokenId>& syms) const;
  void merge_small(std::vector<TokenId>& syms) const;
  void merge_large(std::vector<TokenId>& syms) const;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace recur::tokenizer::detail
