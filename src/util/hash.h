// Fast non-cryptographic hashing (xxHash3) for token blocks, fingerprints and signatures.
// Stable across runs and machines: hashes may be stored and compared later.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace recur {

std::uint64_t hash64(const void* data, std::size_t n_bytes, std::uint64_t seed = 0);
inline std::uint64_t hash64(std::string_view s, std::uint64_t seed = 0) {
  return hash64(s.data(), s.size(), seed);
}
template <typename T>
std::uint64_t hash64(std::span<const T> items, std::uint64_t seed = 0) {
  return hash64(items.data(), items.size_bytes(), seed);
}
// Mixes b into a (order-sensitive), for combining field hashes into one fingerprint.
std::uint64_t hash_combine(std::uint64_t a, std::uint64_t b);

// Incremental hashing of a stream of pieces; equal to hash64 of the concatenation.
class Hasher {
 public:
  explicit Hasher(std::uint64_t seed = 0);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& update(const void* data, std::size_t n_bytes);
  Hasher& update(std::string_view s) { return update(s.data(), s.size()); }
  std::uint64_t digest() const;

 private:
  void* state_;
};

}  // namespace recur
