#include "server/request_ids.h"

#include <fmt/format.h>

#include <chrono>

#include "util/hash.h"

namespace recur::server {

namespace {

std::uint64_t process_salt() {
  static const auto salt =
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return salt;
}

}  // namespace

RequestIdentity RequestIds::next(const char* prefix) {
  // The number is taken exactly once: reading the counter again later (as a second load did)
  // can see another request's increment and hand two requests the same id and seed.
  const std::uint64_t n = counter_.fetch_add(1, std::memory_order_relaxed);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  RequestIdentity r;
  r.id = fmt::format("{}-{:x}{:06x}", prefix, now, n);
  // xxh3 of an 8-byte input is a bijection for a fixed key, so distinct numbers give distinct
  // seeds; the key (the first request's clock reading) keeps replicas and restarts from drawing
  // the same sequence of seeds.
  r.seed = hash64(&n, sizeof(n), process_salt());
  return r;
}

}  // namespace recur::server
