// The HTTP layer: listening socket, worker pool sizing, keep-alive and timeouts, body limit,
// API-key check, OpenAI-shaped errors for unknown routes and oversized bodies, request metrics.
// The only file that includes httplib.h; routes see the plain structs below.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/metrics.h"
#include "util/status.h"

namespace recur::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (tests)
  std::string api_key;  // empty: no auth
  std::size_t body_limit_bytes = 16u << 20;
  int worker_threads = 32;
  std::int64_t keep_alive_ms = 5000;
  std::int64_t read_timeout_ms = 30000;
  std::int64_t write_timeout_ms = 60000;
};

struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string header(const std::string& lower_name) const;
};

// Streaming sink: write() returns false once the client is gone; the producer must then stop.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  virtual bool write(std::string_view data) = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is produced by this function after the headers are sent (SSE). It returns
  // when the response is complete or the client is gone.
  std::function<void(ChunkWriter&)> stream;

  static HttpResponse json(int status, std::string body);
  static HttpResponse error(const ApiError& err);
};

using Handler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  HttpServer(HttpOptions options, ServerMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void get(const std::string& path, Handler handler);
  void post(const std::string& path, Handler handler);
  // Paths that never need the API key (health checks from load balancers).
  void allow_without_key(const std::string& path);

  // Binds the socket (port 0 picks a free one); the error names the address.
  Status bind();
  int port() const;
  // Serves until stop(); returns false if the server could not run.
  bool serve();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Constant-time comparison, so a key cannot be guessed byte by byte from response times.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace recur::server
