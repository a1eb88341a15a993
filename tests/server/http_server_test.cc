// The HTTP layer on loopback with a real client: auth, errors, body limit, streaming, metrics.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace recur::server {
namespace {

class HttpServerTest : public testing::Test {
 protected:
  void start(HttpOptions options) {
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, metrics_);
    server_->get("/health", [](const HttpRequest&) { return HttpResponse::json(200, "{}"); });
    server_->allow_without_key("/health");
    server_->post("/echo", [](const HttpRequest& r) {
      return HttpResponse::json(200, nlohmann::json{{"n", r.body.size()}}.dump());
    });
    server_->get("/stream", [](const HttpRequest&) {
      HttpResponse r;
      r.content_type = "text/event-stream";
      r.stream = [](ChunkWriter& w) {
        for (int i = 0; i < 3; ++i) w.write("data: " + std::to_string(i) + "\n\n");
      };
      return r;
    });
    server_->get_by_id({.prefix = "/items/", .suffix = "/parts"}, [](const HttpRequest& r) {
      nlohmann::json q = r.query;
      return HttpResponse::json(200, nlohmann::json{{"id", r.path_id}, {"query", q}}.dump());
    });
    server_->get_by_id({.prefix = "/names/", .any_text = true}, [](const HttpRequest& r) {
      return HttpResponse::json(200, nlohmann::json{{"id", r.path_id}}.dump());
    });
    ASSERT_TRUE(server_->bind().is_ok());
    thread_ = std::thread([this] { server_->serve(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  ServerMetrics metrics_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, UnknownRouteIsOpenAiShaped404) {
  start({});
  auto res = client_->Get("/v1/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("/v1/nope"), std::string::npos);
}

TEST_F(HttpServerTest, ApiKeyRequiredExceptHealth) {
  start({.api_key = "sk-test"});
  EXPECT_EQ(client_->Get("/health")->status, 200);
  auto res = client_->Post("/echo", "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(nlohmann::json::parse(res->body)["error"]["type"], "authentication_error");
  httplib::Headers wrong = {{"Authorization", "Bearer sk-tesT"}};
  EXPECT_EQ(client_->Post("/echo", wrong, "{}", "application/json")->status, 401);
  httplib::Headers right = {{"Authorization", "Bearer sk-test"}};
  EXPECT_EQ(client_->Post("/echo", right, "{}", "application/json")->status, 200);
}

TEST_F(HttpServerTest, BodyLimitGives413NamingTheLimit) {
  start({.body_limit_bytes = 2048});
  auto res = client_->Post("/echo", std::string(4096, 'x'), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("--body-limit-bytes"), std::string::npos);
  EXPECT_EQ(client_->Post("/echo", std::string(1000, 'x'), "application/json")->status, 200);
}

// curl -d without a Content-Type sends JSON as a form, which the HTTP library caps at 8192 bytes:
// the 413 says so rather than blaming --body-limit-bytes (the bug this test was written for).
TEST_F(HttpServerTest, AFormEncodedBodyOverTheLibrarysFormCapSaysToSendJson) {
  start({});
  auto res =
      client_->Post("/echo", std::string(20000, 'x'), "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  const std::string message = nlohmann::json::parse(res->body)["error"]["message"];
  EXPECT_NE(message.find("Content-Type: application/json"), std::string::npos) << message;
  EXPECT_EQ(message.find("--body-limit-bytes"), std::string::npos) << message;
  EXPECT_EQ(client_->Post("/echo", std::string(20000, 'x'), "application/json")->status, 200);
}

TEST_F(HttpServerTest, StreamsChunks) {
  start({});
  auto res = client_->Get("/stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}

TEST_F(HttpServerTest, CountsRequestsByRoute) {
  start({});
  client_->Get("/health");
  client_->Get("/unknown/path/abc");
  // The request is counted after its response is written: wait for the count to land.
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text = metrics_.render();
    // Each request may be on its own connection and worker, so either may be counted first.
    if (text.find("route=\"other\"") != std::string::npos &&
        text.find("route=\"/health\"") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_NE(text.find("route=\"/health\""), std::string::npos);
  EXPECT_NE(text.find("route=\"other\""), std::string::npos);
  EXPECT_EQ(text.find("/unknown/path/abc"), std::string::npos) << "raw paths must not be labels";
}

TEST_F(HttpServerTest, IdRoutesHandTheIdAndTheQuery) {
  start({});
  auto res = client_->Get("/items/resp_ab.c-1/parts?order=asc&limit=3");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["id"], "resp_ab.c-1");
  EXPECT_EQ(j["query"]["order"], "asc");
  EXPECT_EQ(j["query"]["limit"], "3");
  EXPECT_EQ(client_->Get("/items/a/b/parts")->status, 404) << "an id is one segment";
  EXPECT_EQ(client_->Get("/items/a")->status, 404) << "the suffix is part of the route";
  res = client_->Get("/names/Qwen/Qwen3-0.6B");
  ASSERT_TRUE(res);
  EXPECT_EQ(nlohmann::json::parse(res->body)["id"], "Qwen/Qwen3-0.6B");
}

// A browser's preflight: answered before the API key (it never carries one), 204 with the
// Access-Control headers for an allowed origin, 403 naming the flag for another.
TEST_F(HttpServerTest, PreflightOfAnAllowedOriginIsAnswered) {
  start({.api_key = "sk-test"});
  httplib::Headers h = {{"Origin", "http://localhost:5173"},
                        {"Access-Control-Request-Method", "POST"},
                        {"Access-Control-Request-Headers", "authorization,x-stainless-os"}};
  auto res = client_->Options("/echo", h);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Headers"), "authorization,x-stainless-os");
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(res->get_header_value("Access-Control-Max-Age"), "7200");
  EXPECT_EQ(res->get_header_value_count("Access-Control-Allow-Origin"), 1u);
  EXPECT_EQ(client_->Options("/items/x/parts", h)->status, 204) << "id routes too";

  httplib::Headers evil = {{"Origin", "https://evil.example"},
                           {"Access-Control-Request-Method", "POST"}};
  res = client_->Options("/echo", evil);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin"));
  EXPECT_NE(res->body.find("--cors-origins"), std::string::npos) << res->body;
  EXPECT_EQ(client_->Options("/nope", h)->status, 404);
  res = client_->Options("/echo");
  EXPECT_EQ(res->status, 204) << "a plain OPTIONS";
  EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin"));
}

TEST_F(HttpServerTest, ResponsesToAnAllowedOriginCarryAllowOrigin) {
  start({.api_key = "sk-test", .cors_origins = "https://app.example"});
  httplib::Headers h = {{"Origin", "https://app.example"}, {"Authorization", "Bearer sk-test"}};
  auto res = client_->Post("/echo", h, "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(res->get_header_value("Vary"), "Origin");
  res = client_->Get("/stream", h);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://app.example")
      << "streams too";
  // Errors too, so the page can read why (a 401 before any route ran).
  res = client_->Post("/echo", {{"Origin", "https://app.example"}}, "{}", "application/json");
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  // Another origin is answered without them: the browser hides the answer from its page.
  res = client_->Post("/echo",
                      {{"Origin", "http://localhost:3000"}, {"Authorization", "Bearer sk-test"}},
                      "{}", "application/json");
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin"));
  res = client_->Post("/echo", {{"Authorization", "Bearer sk-test"}}, "{}", "application/json");
  EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin")) << "no Origin: not a browser";
}

TEST(ConstantTimeEqual, Compares) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

}  // namespace
}  // namespace recur::server

namespace recur::server {
namespace {

// Regression: a stop right after startup (a model that fails to load) was lost when httplib had
// not entered its accept loop yet, and the process kept listening forever.
TEST(HttpServerStop, IsNeverLostWhateverTheTiming) {
  for (int delay_us : {0, 0, 10, 50, 200, 1000}) {
    ServerMetrics metrics;
    HttpServer server({.port = 0}, metrics);
    ASSERT_TRUE(server.bind().is_ok());
    std::thread t([&] { server.serve(); });
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    server.stop();
    t.join();  // hangs (and the test times out) if the stop was lost
  }
  ServerMetrics metrics;
  HttpServer before({.port = 0}, metrics);
  ASSERT_TRUE(before.bind().is_ok());
  before.stop();
  EXPECT_FALSE(before.serve()) << "a server stopped before serving does not start";
}

// Regression: httplib's default socket options set SO_REUSEPORT, so a second server bound a port
// another one was listening on and the kernel split connections between the two processes.
TEST(HttpServerBind, APortInUseIsAnErrorNamingIt) {
  ServerMetrics metrics;
  HttpServer first({.port = 0}, metrics);
  ASSERT_TRUE(first.bind().is_ok());
  std::thread t([&] { first.serve(); });
  httplib::Client client("127.0.0.1", first.port());
  for (int i = 0; i < 2000 && !client.Get("/"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(client.Get("/")) << "the first server answers";
  HttpServer second({.port = first.port()}, metrics);
  Status s = second.bind();
  EXPECT_FALSE(s.is_ok()) << "a second server bound port " << first.port();
  EXPECT_NE(s.message().find(std::to_string(first.port())), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
  first.stop();
  t.join();
  // Once the first is gone the port is free again at once (SO_REUSEADDR is kept).
  HttpServer third({.port = first.port()}, metrics);
  EXPECT_TRUE(third.bind().is_ok());
}

}  // namespace
}  // namespace recur::server
