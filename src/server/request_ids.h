// Names each request once: the id the client sees (response `id`, engine logs), the unique token
// its items' and tool calls' ids are made of, and the sampling seed used when the request gives
// none, all from one draw of a process-wide counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace recur::server {

struct RequestIdentity {
  // 32 hex digits: 16 a bijection of the counter (unique within the process) and 16 from the
  // kernel's random source, so an id cannot be guessed from another (a stored response is read
  // by its id).
  std::string token;
  std::string id;          // the prefix and the token: "chatcmpl-" + token, "resp_" + token
  std::uint64_t seed = 0;  // for requests without `seed`: differs between any two requests
};

class RequestIds {
 public:
  // Thread-safe. Two calls never return the same token, id or seed, however they interleave.
  // `prefix` ends with its separator, as the API's ids have it: "chatcmpl-", "resp_", "msg_".
  RequestIdentity next(const char* prefix);

 private:
  std::atomic<std::uint64_t> counter_{0};
};

}  // namespace recur::server
