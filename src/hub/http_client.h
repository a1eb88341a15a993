// The few HTTP exchanges the Hub client needs, over libcurl: a metadata GET (JSON), a HEAD that
// stops at the first absolute redirect (the Hub's X-Linked-* headers ride on that redirect), and
// a streamed GET from a byte offset that follows redirects (to the CDN). The bearer token goes
// only to the host it was meant for: curl drops it on a redirect to another host.
// Thread-compatible: one client per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::hub {

struct HttpReply {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, names lower-cased
  std::string body;                            // small bodies only (metadata, error messages)
  std::string url;                             // the URL that answered (after redirects)
  std::string header(const std::string& lower_name) const;
};

struct HttpClientOptions {
  std::string token;  // sent as "Authorization: Bearer" when not empty
  std::int64_t request_timeout_ms = 10000;
  std::int64_t stall_timeout_ms = 60000;  // a download with no byte for this long fails
  std::string user_agent = "recur";
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // A network failure (no connection, DNS, TLS, timeout) is an error naming the URL; any HTTP
  // status is a reply.
  Result<HttpReply> get(const std::string& url, std::size_t max_body_bytes = 16u << 20);
  // HEAD; a redirect to a relative Location (a renamed repository) is followed, an absolute one
  // is returned as is.
  Result<HttpReply> head(const std::string& url);
  // GET from byte `offset` (a Range request when > 0), following redirects. Body bytes of a 2xx
  // reply go to `sink` (false from it aborts); `on_start(status)` is called before the first byte
  // of the body, with 200 (the whole file) or 206 (from offset). Other statuses keep their body in
  // the reply.
  Result<HttpReply> download(const std::string& url, std::int64_t offset,
                             const std::function<void(long status)>& on_start,
                             const std::function<bool(std::string_view)>& sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes one path segment (or a path, keeping its '/' when keep_slash).
std::string url_encode(std::string_view text, bool keep_slash);

}  // namespace recur::hub
