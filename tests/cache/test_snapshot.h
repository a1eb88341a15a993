// A minimal Snapshot for cache tests: the cache only ever reads these three numbers, so a value
// holding them is the real interface, not a stand-in for engine behaviour.
#pragma once

#include <memory>
#include <numeric>
#include <vector>

#include "cache/keys.h"
#include "cache/snapshot.h"

namespace recur::cache::testing {

class SizedSnapshot final : public Snapshot {
 public:
  SizedSnapshot(std::size_t n_bytes, std::int64_t n_tokens, bool truncatable, int tag = 0)
      : n_bytes_(n_bytes), n_tokens_(n_tokens), truncatable_(truncatable), tag_(tag) {}
  std::size_t byte_size() const override { return n_bytes_; }
  std::int64_t n_tokens() const override { return n_tokens_; }
  bool truncatable() const override { return truncatable_; }
  int tag() const { return tag_; }

 private:
  std::size_t n_bytes_;
  std::int64_t n_tokens_;
  bool truncatable_;
  int tag_;
};

inline std::shared_ptr<const Snapshot> snap(std::size_t n_bytes, std::size_t n_tokens,
                                            bool truncatable = false, int tag = 0) {
  return std::make_shared<SizedSnapshot>(n_bytes, static_cast<std::int64_t>(n_tokens), truncatable,
                                         tag);
}

inline int tag_of(const std::shared_ptr<const Snapshot>& s) {
  return static_cast<const SizedSnapshot&>(*s).tag();
}

// Tokens first, first+1, ..., first+n-1.
inline std::vector<Token> iota_tokens(std::size_t n, Token first = 0) {
  std::vector<Token> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline std::vector<Token> concat(std::vector<Token> a, const std::vector<Token>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline CacheKey key_for(std::string session_id = "s1", std::string tenant = "t1",
                        std::string model = "m1") {
  CacheKey k;
  k.tenant.api_key_identity = std::move(tenant);
  k.bucket.model_id = std::move(model);
  k.session = session_id.empty() ? SessionKey::anonymous()
                                 : SessionKey{SessionKind::kPromptCacheKey, std::move(session_id)};
  return k;
}

}  // namespace recur::cache::testing
