// The HTTP layer: listening socket, worker pool sizing, keep-alive and timeouts, body limit,
// API-key check (a bearer token or x-api-key), CORS (preflights and the allow-origin header of
// every response), errors for unknown routes and oversized bodies in the route's API's shape,
// request metrics.
// The only file that includes httplib.h; routes see the plain structs below.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/cors.h"
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
  std::string cors_origins = std::string(kLoopbackOrigins);  // CorsPolicy's list
};

struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string path_id;  // the {id} segment of a get_by_id / del_by_id route; empty elsewhere
  std::map<std::string, std::string> query;  // the URL's query parameters (the last of a name)
  // When the request's headers were read (its body is read after): where its timing starts.
  std::chrono::steady_clock::time_point received_at;
  // True once the client has closed its end of the connection (checked without reading or
  // writing). Null in requests that were not received over a socket (tests).
  std::function<bool()> client_gone;
  std::string header(const std::string& lower_name) const;
  // The query parameter `name`; nullopt when absent.
  std::optional<std::string> query_param(const std::string& name) const;
};

// Where a response body goes while it is produced. write() returns false once the client is
// gone; the producer must then stop.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  virtual bool write(std::string_view data) = 0;
  // Called every fraction of a second while the producer waits: false once the client is gone.
  // A stream sends `heartbeat` (an SSE comment), which also keeps proxies from timing out.
  virtual bool keep_alive(std::string_view heartbeat) { return write(heartbeat); }
  // The request failed. A stream writes `stream_text` (its error event); a held response answers
  // with the error's status.
  virtual void fail(const ApiError& /*err*/, std::string_view stream_text) { write(stream_text); }
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
  static HttpResponse error(const ApiError& err, ErrorShape shape = ErrorShape::kOpenAI);
};

// A non-streaming body, held until it is complete so that the HTTP status can still say how the
// request ended (a 503 when the server shut down under it, not a 200 with an error body). Nothing
// is written while the engine works; the client's leaving is seen through the connection itself.
class HeldResponse final : public ChunkWriter {
 public:
  explicit HeldResponse(std::function<bool()> client_gone, ErrorShape shape = ErrorShape::kOpenAI)
      : client_gone_(std::move(client_gone)), shape_(shape) {}
  bool write(std::string_view data) override;
  bool keep_alive(std::string_view heartbeat) override;
  void fail(const ApiError& err, std::string_view stream_text) override;
  // The response: the body with 200, the error with its status, or 499 once the client is gone.
  HttpResponse take();

 private:
  std::function<bool()> client_gone_;
  ErrorShape shape_;
  std::string body_;
  std::optional<ApiError> error_;
  bool gone_ = false;
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
  // A route with an id in its path: PREFIX{id}SUFFIX.
  struct IdRoute {
    std::string prefix;  // "/v1/responses/"
    std::string suffix;  // "" or "/input_items"
    // The id is one path segment (letters, digits, '_', '-', '.'), or with this, any text up to
    // the suffix (model names such as "Qwen/Qwen3-0.6B" or "qwen3:8b").
    bool any_text = false;
  };
  // GET and DELETE of an IdRoute; the handler reads the id from HttpRequest::path_id. Metrics
  // label the route PREFIX{id}SUFFIX.
  void get_by_id(IdRoute route, Handler handler);
  void del_by_id(IdRoute route, Handler handler);
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
