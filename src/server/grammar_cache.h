// Compiled grammars by their GBNF text, bound to the model's vocabulary: a schema's second request
// reuses the automaton and the token masks its first one computed. The vocabulary's byte table
// is built on first use (a quarter second on a 248k vocabulary). Thread-safe; the TokenGrammars
// it hands out are stepped by the engine thread only.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace recur::server {

class GrammarCache {
 public:
  explicit GrammarCache(const tokenizer::Tokenizer& tokenizer, std::size_t capacity = 16);

  // Errors are the parser's (kInvalidArgument, with line and column).
  Result<std::shared_ptr<grammar::TokenGrammar>> get(const std::string& gbnf,
                                                     const std::string& root);
  std::shared_ptr<const grammar::Vocabulary> vocabulary();

 private:
  const tokenizer::Tokenizer* tokenizer_;
  std::size_t capacity_;
  std::mutex mu_;
  std::shared_ptr<const grammar::Vocabulary> vocab_;  // guarded by mu_
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<grammar::TokenGrammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace recur::server
