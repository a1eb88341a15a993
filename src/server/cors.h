// Cross-origin access for browser clients (--cors-origins): which origins may call the API and the
// Access-Control-* headers of preflights and responses. Plain strings in and out, so the HTTP
// layer applies it and tests check it without a socket. Not an access control: a client that is
// not a browser ignores all of this (the API key is the control).
// Immutable, so thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace recur::server {

// What --cors-origins allows by default: pages served from this machine, on any port.
inline constexpr std::string_view kLoopbackOrigins =
    "http://localhost:*,http://127.0.0.1:*,http://[::1]:*";

class CorsPolicy {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  // `origins`: a comma list of origins (`scheme://host[:port]`), `scheme://host:*` for any port of
  // a host, `*` for any origin; empty allows none.
  explicit CorsPolicy(std::string_view origins);

  bool allows(std::string_view origin) const;
  // The headers of a 204 answer to an allowed origin's preflight. `requested_headers` is its
  // Access-Control-Request-Headers, echoed (empty: the headers recur's clients send).
  Headers preflight_headers(std::string_view origin, std::string_view requested_headers) const;
  // The headers of an actual response to an allowed origin (streams too).
  Headers response_headers(std::string_view origin) const;

 private:
  std::vector<std::string> exact_;        // "http://host:port"
  std::vector<std::string> any_port_of_;  // "http://host" (given as "http://host:*")
  bool any_ = false;
};

}  // namespace recur::server
