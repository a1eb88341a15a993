#include "server/request_ids.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <chrono>

#include "util/hash.h"

namespace recur::server {

namespace {

std::uint64_t random_u64() {
  std::uint64_t v = 0;
  // getrandom on 8 bytes never returns short once the pool is initialised (it blocks until then);
  // the clock is only a fallback for a kernel without the call.
  if (getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
    v = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return v;
}

std::uint64_t process_salt() {
  static const std::uint64_t salt = random_u64();
  return salt;
}

}  // namespace

RequestIdentity RequestIds::next(const char* prefix) {
  // The number is taken exactly once: reading the counter again later (as a second load did)
  // can see another request's increment and hand two requests the same id and seed.
  const std::uint64_t n = counter_.fetch_add(1, std::memory_order_relaxed);
  // xxh3 of an 8-byte input is a bijection for a fixed key, so distinct numbers give distinct
  // values; the random key keeps replicas and restarts from drawing the same sequence.
  const std::uint64_t unique = hash64(&n, sizeof(n), process_salt());
  RequestIdentity r;
  r.token = fmt::format("{:016x}{:016x}", unique, random_u64());
  r.id = prefix + r.token;
  r.seed = hash64(&n, sizeof(n), process_salt() ^ 0x5eed);
  return r;
}

}  // namespace recur::server
