#include "util/hash.h"

#include <xxhash.h>

#include "util/check.h"

namespace recur {

std::uint64_t hash64(const void* data, std::size_t n, std::uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}

std::uint64_t hash_combine(std::uint64_t a, std::uint64_t b) {
  std::uint64_t pair[2] = {a, b};
  return XXH3_64bits(pair, sizeof(pair));
}

Hasher::Hasher(std::uint64_t seed) : state_(XXH3_createState()) {
  RECUR_CHECK(state_ != nullptr);
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

Hasher& Hasher::update(const void* data, std::size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, n);
  return *this;
}

std::uint64_t Hasher::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace recur
