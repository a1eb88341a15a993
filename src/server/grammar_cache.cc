#include "server/grammar_cache.h"

namespace recur::server {

GrammarCache::GrammarCache(const tokenizer::Tokenizer& tokenizer, std::size_t capacity)
    : tokenizer_(&tokenizer), capacity_(capacity) {}

std::shared_ptr<const grammar::Vocabulary> GrammarCache::vocabulary() {
  std::lock_guard lock(mu_);
  if (vocab_ == nullptr) {
    vocab_ = std::make_shared<const grammar::Vocabulary>(tokenizer_->token_byte_table());
  }
  return vocab_;
}

Result<std::shared_ptr<grammar::TokenGrammar>> GrammarCache::get(const std::string& gbnf,
                                                                 const std::string& root) {
  const std::string key = root + '\n' + gbnf;
  {
    std::lock_guard lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  RECUR_ASSIGN_OR_RETURN(auto parsed, grammar::parse_gbnf(gbnf, root));
  auto compiled = std::make_shared<grammar::TokenGrammar>(std::move(parsed), vocabulary());
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

}  // namespace recur::server
