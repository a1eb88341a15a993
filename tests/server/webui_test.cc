// The embedded chat page: every file served with its type and validators, references that
// resolve, 304 revalidation, no API key needed for the page while the API still asks for one.
#include "server/webui.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "server/embedded_files.h"

namespace recur::server {
namespace {

std::string header_of(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return {};
}

HttpRequest get_with(std::string if_none_match = "") {
  HttpRequest req;
  req.method = "GET";
  if (!if_none_match.empty()) req.headers["if-none-match"] = if_none_match;
  return req;
}

TEST(WebUi, EmbedsEverySourceFileByteForByte) {
  std::set<std::string> embedded;
  for (const EmbeddedFile& f : webui::files()) {
    embedded.insert(std::string(f.path));
    std::ifstream in(std::string(RECUR_SOURCE_DIR) + "/src/server/webui/" + std::string(f.path),
                     std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), f.bytes) << f.path;
    EXPECT_EQ(f.sha256.size(), 64u);
  }
  for (const char* name : {"index.html", "app.js", "api.js", "store.js", "view.js", "style.css"}) {
    EXPECT_TRUE(embedded.count(name)) << name;
  }
}

TEST(WebUi, ServesEachFileWithItsContentType) {
  const std::pair<const char*, const char*> want[] = {
      {"index.html", "text/html; charset=utf-8"},
      {"app.js", "text/javascript; charset=utf-8"},
      {"style.css", "text/css; charset=utf-8"},
      {"icon.svg", "image/svg+xml"},
  };
  for (const auto& [name, type] : want) {
    HttpResponse r = webui_response(name, get_with());
    EXPECT_EQ(r.status, 200) << name;
    EXPECT_EQ(r.content_type, type) << name;
    EXPECT_FALSE(r.body.empty()) << name;
    EXPECT_EQ(header_of(r, "Cache-Control"), "no-cache") << name;
    EXPECT_EQ(header_of(r, "X-Content-Type-Options"), "nosniff") << name;
    EXPECT_FALSE(header_of(r, "ETag").empty()) << name;
  }
  HttpResponse page = webui_response("index.html", get_with());
  EXPECT_NE(header_of(page, "Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
}

TEST(WebUi, RevalidationAnswers304OnlyForTheCurrentEtag) {
  const std::string etag = header_of(webui_response("app.js", get_with()), "ETag");
  ASSERT_GE(etag.size(), 3u);
  for (const std::string& inm : {etag, "W/" + etag, "\"old\", " + etag, std::string("*")}) {
    HttpResponse r = webui_response("app.js", get_with(inm));
    EXPECT_EQ(r.status, 304) << inm;
    EXPECT_TRUE(r.body.empty()) << inm;
    EXPECT_EQ(header_of(r, "ETag"), etag);
  }
  for (const std::string& inm : {std::string("\"old\""), etag.substr(1)}) {
    EXPECT_EQ(webui_response("app.js", get_with(inm)).status, 200) << inm;
  }
  // Two files never share a validator.
  EXPECT_NE(etag, header_of(webui_response("api.js", get_with()), "ETag"));
}

TEST(WebUi, UnknownFileIs404) {
  EXPECT_EQ(webui_response("nope.js", get_with()).status, 404);
  EXPECT_EQ(webui_response("../CMakeLists.txt", get_with()).status, 404);
}

// Every file the page names (webui/NAME in the HTML, './NAME.js' imports in scripts) is embedded,
// so a renamed file cannot leave the page half loaded.
TEST(WebUi, EveryReferencedFileIsEmbedded) {
  std::set<std::string> embedded;
  for (const EmbeddedFile& f : webui::files()) embedded.insert(std::string(f.path));
  int checked = 0;
  for (const EmbeddedFile& f : webui::files()) {
    const std::string text(f.bytes);
    for (const std::string prefix : {"\"webui/", "'./"}) {
      for (std::size_t at = text.find(prefix); at != std::string::npos;
           at = text.find(prefix, at + 1)) {
        const std::size_t start = at + prefix.size();
        const std::size_t end = text.find_first_of("\"'", start);
        ASSERT_NE(end, std::string::npos);
        EXPECT_TRUE(embedded.count(text.substr(start, end - start)))
            << f.path << " names " << text.substr(start, end - start);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 6);
}

TEST(WebUi, PageNeedsNoKeyWhileTheApiDoes) {
  ServerMetrics metrics;
  HttpServer http({.port = 0, .api_key = "sk-page"}, metrics);
  register_webui(http);
  http.get("/v1/models", [](const HttpRequest&) { return HttpResponse::json(200, "{}"); });
  ASSERT_TRUE(http.bind().is_ok());
  std::thread t([&] { http.serve(); });
  httplib::Client client("127.0.0.1", http.port());
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<title>recur</title>"), std::string::npos);
  auto script = client.Get("/webui/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  auto again = client.Get("/webui/app.js", {{"If-None-Match", script->get_header_value("ETag")}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_EQ(client.Get("/v1/models")->status, 401);
  EXPECT_EQ(client.Get("/webui/missing.js")->status, 401);  // not a page file: the key applies
  http.stop();
  t.join();
}

}  // namespace
}  // namespace recur::server
