#include "server/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "server/worker_pool.h"
#include "util/log.h"

namespace recur::server {

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> HttpRequest::query_param(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

HttpResponse HttpResponse::json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::error(const ApiError& err, ErrorShape shape) {
  HttpResponse r = json(err.http_status, err.to_json(shape));
  if (err.retry_after_s > 0)
    r.headers.emplace_back("Retry-After", std::to_string(err.retry_after_s));
  return r;
}

bool HeldResponse::write(std::string_view data) {
  if (gone_) return false;
  body_ += data;
  return true;
}

bool HeldResponse::keep_alive(std::string_view) {
  if (!gone_ && client_gone_ && client_gone_()) gone_ = true;
  return !gone_;
}

void HeldResponse::fail(const ApiError& err, std::string_view) { error_ = err; }

HttpResponse HeldResponse::take() {
  if (error_) return HttpResponse::error(*error_, shape_);
  if (gone_) {
    // nginx's "client closed request": only the request log and metrics see it.
    return HttpResponse::error(ApiError{.http_status = 499,
                                        .type = "client_closed_request",
                                        .message = "the client closed the connection"},
                               shape_);
  }
  return HttpResponse::json(200, std::move(body_));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Compare over the longer length so the time does not reveal a matching prefix length either.
  size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

namespace {

thread_local std::chrono::steady_clock::time_point t_request_start;

class SinkWriter final : public ChunkWriter {
 public:
  explicit SinkWriter(httplib::DataSink& sink) : sink_(sink) {}
  bool write(std::string_view data) override {
    if (broken_) return false;
    if (!sink_.write(data.data(), data.size())) broken_ = true;
    return !broken_;
  }

 private:
  httplib::DataSink& sink_;
  bool broken_ = false;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether `addr` (a getsockname/getpeername result) is the textual address and port httplib
// reported for the connection.
bool same_endpoint(const sockaddr_storage& addr, const std::string& text, int port) {
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    in_addr want{};
    return ntohs(a.sin_port) == port && ::inet_pton(AF_INET, text.c_str(), &want) == 1 &&
           want.s_addr == a.sin_addr.s_addr;
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    in6_addr want{};
    std::string host = text.substr(0, text.find('%'));  // drop a zone id ("fe80::1%eth0")
    return ntohs(a.sin6_port) == port && ::inet_pton(AF_INET6, host.c_str(), &want) == 1 &&
           std::memcmp(&want, &a.sin6_addr, sizeof(want)) == 0;
  }
  return false;
}

// httplib 0.11 does not hand handlers their socket, so the connection is found among the
// process's descriptors by its address pair, which no other open socket shares. -1: not found.
int find_connection_fd(const std::string& local_addr, int local_port,
                       const std::string& remote_addr, int remote_port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    sockaddr_storage local{}, peer{};
    socklen_t n_local = sizeof(local), n_peer = sizeof(peer);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n_local) != 0) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &n_peer) != 0) continue;
    if (same_endpoint(local, local_addr, local_port) &&
        same_endpoint(peer, remote_addr, remote_port)) {
      return fd;
    }
  }
  return -1;
}

// Asks the kernel, without reading, whether the peer has closed or reset the connection.
bool peer_closed(int fd) {
  pollfd p{.fd = fd, .events = POLLRDHUP, .revents = 0};
  if (::poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

HttpRequest to_request(const httplib::Request& req) {
  HttpRequest out;
  out.method = req.method;
  out.path = req.path;
  out.body = req.body;
  out.received_at = t_request_start;
  for (const auto& [k, v] : req.headers) out.headers[lower(k)] = v;
  for (const auto& [k, v] : req.params) out.query[k] = v;
  // Found on first use: only requests that wait for the engine ask.
  out.client_gone = [fd = std::optional<int>(), local = req.local_addr, lport = req.local_port,
                     remote = req.remote_addr, rport = req.remote_port]() mutable {
    if (!fd) {
      fd = find_connection_fd(local, lport, remote, rport);
      if (*fd < 0)
        log::warn("cannot find the socket of {}:{}; its leaving goes unseen", remote, rport);
    }
    return *fd >= 0 && peer_closed(*fd);
  };
  return out;
}

void write_response(HttpResponse r, httplib::Response& res) {
  res.status = r.status;
  for (auto& [k, v] : r.headers) res.set_header(k, v);
  if (r.stream) {
    auto fn = std::make_shared<std::function<void(ChunkWriter&)>>(std::move(r.stream));
    res.set_chunked_content_provider(r.content_type, [fn](size_t, httplib::DataSink& sink) {
      SinkWriter writer(sink);
      (*fn)(writer);
      sink.done();
      return true;
    });
  } else {
    res.set_content(r.body, r.content_type);
  }
}

// httplib's task queue over our on-demand pool: each accepted connection is one job.
class PoolQueue final : public httplib::TaskQueue {
 public:
  PoolQueue(std::size_t min_threads, std::size_t max_threads,
            std::shared_ptr<std::atomic<WorkerPool*>> published)
      : pool_(min_threads, max_threads), published_(std::move(published)) {
    published_->store(&pool_);
  }
  ~PoolQueue() override { published_->store(nullptr); }
  void enqueue(std::function<void()> fn) override { pool_.enqueue(std::move(fn)); }
  void shutdown() override {
    published_->store(nullptr);
    pool_.shutdown();
  }

 private:
  WorkerPool pool_;
  std::shared_ptr<std::atomic<WorkerPool*>> published_;
};

}  // namespace

struct HttpServer::Impl {
  HttpOptions options;
  ServerMetrics& metrics;
  httplib::Server server;
  std::set<std::string> open_paths;
  std::set<std::string> known_paths;
  int bound_port = -1;
  std::mutex state_mu;  // guards the two flags below
  bool stop_requested = false;
  bool serving = false;
  // The live worker pool, for the metrics collector (which may outlive this server); null before
  // listening and after shutdown. Only HTTP workers render metrics, so the pool outlives a read.
  std::shared_ptr<std::atomic<WorkerPool*>> pool = std::make_shared<std::atomic<WorkerPool*>>();

  std::vector<IdRoute> id_routes;  // get_by_id / del_by_id routes
  CorsPolicy cors;

  Impl(HttpOptions o, ServerMetrics& m)
      : options(std::move(o)), metrics(m), cors(options.cors_origins) {}

  // The metrics label of a path: a registered route, PREFIX{id}SUFFIX, or "other" (so unknown
  // paths cannot grow the label set).
  std::string route_label(const std::string& path) const {
    if (known_paths.count(path)) return path;
    for (const IdRoute& r : id_routes) {
      if (path.size() <= r.prefix.size() + r.suffix.size() || !path.starts_with(r.prefix) ||
          !path.ends_with(r.suffix)) {
        continue;
      }
      const std::string_view id(path.data() + r.prefix.size(),
                                path.size() - r.prefix.size() - r.suffix.size());
      if (r.any_text || id.find('/') == std::string_view::npos) {
        return r.prefix + "{id}" + r.suffix;
      }
    }
    return "other";
  }

  httplib::Server::Handler wrap(Handler handler) {
    return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      HttpRequest r = to_request(req);
      if (req.matches.size() > 1) r.path_id = req.matches[1].str();
      write_response(handler(r), res);
    };
  }

  static std::string id_pattern(const IdRoute& r) {
    return r.prefix + (r.any_text ? "(.+)" : "([A-Za-z0-9_.-]+)") + r.suffix;
  }

  // OPTIONS on a route: a browser's CORS preflight (with Origin), answered before the API-key
  // check because a preflight never carries credentials.
  void answer_options(const httplib::Request& req, httplib::Response& res) const {
    if (route_label(req.path) == "other") {
      res.status = 404;  // the error handler writes the body
      return;
    }
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty()) {
      res.status = 204;
      res.set_header("Allow", "GET, POST, DELETE, OPTIONS");
      return;
    }
    if (!cors.allows(origin)) {
      // The browser would block the call anyway; a 403 that names the flag tells the person
      // reading the network log why.
      ApiError err{.http_status = 403,
                   .type = "permission_error",
                   .code = "cors_origin_not_allowed",
                   .message = fmt::format("origin '{}' may not call this server from a browser; "
                                          "add it to --cors-origins",
                                          origin)};
      write_response(HttpResponse::error(err, error_shape_for_path(req.path)), res);
      return;
    }
    res.status = 204;
    for (auto& [k, v] :
         cors.preflight_headers(origin, req.get_header_value("Access-Control-Request-Headers"))) {
      res.set_header(k, v);
    }
  }
};

HttpServer::HttpServer(HttpOptions options, ServerMetrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), metrics)) {
  Impl& s = *impl_;
  const auto threads = static_cast<std::size_t>(std::max(4, s.options.worker_threads));
  s.server.new_task_queue = [threads, published = s.pool] {
    return new PoolQueue(4, threads, published);
  };
  s.metrics.add_collector([published = s.pool, threads](ServerMetrics& m) {
    WorkerPool* pool = published->load();
    if (pool == nullptr) return;
    WorkerPoolStats st = pool->stats();
    const char* help = "HTTP worker threads: busy (serving a connection) and idle.";
    m.set_gauge("recur_http_workers", help, "state=busy", static_cast<double>(st.busy));
    m.set_gauge("recur_http_workers", help, "state=idle",
                static_cast<double>(st.threads - st.busy));
    m.set_gauge("recur_http_workers_max", "--http-threads: connections served at once.", "",
                static_cast<double>(threads));
    m.set_gauge("recur_http_waiting_connections",
                "Accepted connections waiting for a worker (all --http-threads busy).", "",
                static_cast<double>(st.waiting_jobs));
  });
  auto secs = [](std::int64_t ms) { return static_cast<time_t>(ms / 1000); };
  auto usecs = [](std::int64_t ms) { return static_cast<time_t>((ms % 1000) * 1000); };
  s.server.set_keep_alive_timeout(std::max<time_t>(1, secs(s.options.keep_alive_ms)));
  s.server.set_read_timeout(secs(s.options.read_timeout_ms), usecs(s.options.read_timeout_ms));
  s.server.set_write_timeout(secs(s.options.write_timeout_ms), usecs(s.options.write_timeout_ms));
  s.server.set_payload_max_length(s.options.body_limit_bytes);
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind a port that is in
  // use and the kernel then splits connections between the two processes. SO_REUSEADDR alone
  // keeps restarts quick (TIME_WAIT) while a busy port stays an error.
  s.server.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  s.server.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    t_request_start = std::chrono::steady_clock::now();
    if (req.method == "OPTIONS") {
      s.answer_options(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (s.options.api_key.empty() || s.open_paths.count(req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    // Anthropic's clients send the key as x-api-key.
    const std::string x_api_key = req.get_header_value("x-api-key");
    bool ok = auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
              constant_time_equal(std::string_view(auth).substr(prefix.size()), s.options.api_key);
    ok = ok || (!x_api_key.empty() && constant_time_equal(x_api_key, s.options.api_key));
    if (ok) return httplib::Server::HandlerResponse::Unhandled;
    write_response(HttpResponse::error(unauthorized(auth.empty() && x_api_key.empty()
                                                        ? "missing API key: send 'Authorization: "
                                                          "Bearer KEY' or 'x-api-key: KEY'"
                                                        : "invalid API key"),
                                       error_shape_for_path(req.path)),
                   res);
    return httplib::Server::HandlerResponse::Handled;
  });

  s.server.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a route already wrote its own error
    ApiError err;
    if (res.status == 413 && req.get_header_value("Content-Type")
                                 .starts_with("application/x-www-form-urlencoded")) {
      // cpp-httplib caps form bodies far below --body-limit-bytes; clients meet it by leaving
      // out the content type (curl -d), not by sending too much.
      err = payload_too_large(s.options.body_limit_bytes);
      err.message =
          "a body sent as application/x-www-form-urlencoded (what curl -d sends without a "
          "Content-Type header) may have at most 8192 bytes; send the JSON with "
          "'Content-Type: application/json'";
    } else if (res.status == 413) {
      err = payload_too_large(s.options.body_limit_bytes);
    } else if (res.status == 404) {
      err = not_found(fmt::format("no route for {} {}", req.method, req.path), "unknown_route");
    } else if (res.status == 400) {
      err = invalid_request("", "malformed HTTP request");
    } else {
      err = ApiError{.http_status = res.status,
                     .type = "http_error",
                     .message = fmt::format("HTTP error {}", res.status)};
    }
    write_response(HttpResponse::error(err, error_shape_for_path(req.path)), res);
  });

  // Every response to an allowed origin, errors and streams included (their headers are written
  // after this), lets the page read it.
  s.server.set_post_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty() || res.has_header("Access-Control-Allow-Origin") || !s.cors.allows(origin)) {
      return;
    }
    for (auto& [k, v] : s.cors.response_headers(origin)) res.set_header(k, v);
  });

  s.server.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    double secs_taken =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_request_start).count();
    std::string route = s.route_label(req.path);
    s.metrics.observe_request(route, res.status, secs_taken);
    log::debug("http method={} path={} status={} ms={:.1f}", req.method, route, res.status,
               secs_taken * 1000);
  });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::get(const std::string& path, Handler handler) {
  impl_->known_paths.insert(path);
  impl_->server.Get(path, impl_->wrap(std::move(handler)));
}

void HttpServer::post(const std::string& path, Handler handler) {
  impl_->known_paths.insert(path);
  impl_->server.Post(path, impl_->wrap(std::move(handler)));
}

void HttpServer::get_by_id(IdRoute route, Handler handler) {
  impl_->server.Get(Impl::id_pattern(route), impl_->wrap(std::move(handler)));
  impl_->id_routes.push_back(std::move(route));
}

void HttpServer::del_by_id(IdRoute route, Handler handler) {
  impl_->server.Delete(Impl::id_pattern(route), impl_->wrap(std::move(handler)));
  impl_->id_routes.push_back(std::move(route));
}

void HttpServer::allow_without_key(const std::string& path) { impl_->open_paths.insert(path); }

Status HttpServer::bind() {
  Impl& s = *impl_;
  if (s.options.port == 0) {
    s.bound_port = s.server.bind_to_any_port(s.options.host);
  } else if (s.server.bind_to_port(s.options.host, s.options.port)) {
    s.bound_port = s.options.port;
  }
  if (s.bound_port <= 0) {
    return Error(StatusCode::kIo,
                 "cannot listen on {}:{}: the port is in use (another recur or other server?) "
                 "or the address is not available; choose another with --host/--port",
                 s.options.host, s.options.port);
  }
  return Status::ok();
}

int HttpServer::port() const { return impl_->bound_port; }

bool HttpServer::serve() {
  {
    std::lock_guard lock(impl_->state_mu);
    if (impl_->stop_requested) return false;
    impl_->serving = true;
  }
  bool ok = impl_->server.listen_after_bind();
  std::lock_guard lock(impl_->state_mu);
  impl_->serving = false;
  return ok;
}

void HttpServer::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->state_mu);
    impl_->stop_requested = true;
    if (!impl_->serving) return;  // serve() has not started (it will not) or has returned
  }
  // serve() is entering httplib's accept loop: httplib's stop() only acts once the loop runs, so
  // wait for it (a stop issued right after startup, e.g. when the model fails to load, must not be
  // lost and leave the process listening forever).
  for (int i = 0; i < 2000 && !impl_->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl_->server.stop();
}

}  // namespace recur::server
