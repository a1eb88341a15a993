// Names each request once: the id the client sees (response `id`, engine logs) and the sampling
// seed used when the request gives none, both from one draw of a process-wide counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace recur::server {

struct RequestIdentity {
  std::string id;          // "chatcmpl-<unix seconds hex><counter hex>"
  std::uint64_t seed = 0;  // for requests without `seed`: differs between any two requests
};

class RequestIds {
 public:
  // Thread-safe. Two calls never return the same id or seed, however they interleave.
  RequestIdentity next(const char* prefix);

 private:
  std::atomic<std::uint64_t> counter_{0};
};

}  // namespace recur::server
