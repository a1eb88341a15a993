// --cors-origins: which origins are allowed and the headers they get.
#include "server/cors.h"

#include <gtest/gtest.h>

#include <map>

namespace recur::server {
namespace {

std::map<std::string, std::string> as_map(const CorsPolicy::Headers& h) {
  return {h.begin(), h.end()};
}

TEST(CorsPolicy, DefaultAllowsLoopbackPagesOnAnyPort) {
  CorsPolicy p(kLoopbackOrigins);
  EXPECT_TRUE(p.allows("http://localhost:3000"));
  EXPECT_TRUE(p.allows("http://localhost"));
  EXPECT_TRUE(p.allows("http://127.0.0.1:8080"));
  EXPECT_TRUE(p.allows("http://[::1]:5173"));
  EXPECT_TRUE(p.allows("http://[::1]"));
  EXPECT_TRUE(p.allows("HTTP://LocalHost:1")) << "scheme and host are case-insensitive";
  EXPECT_FALSE(p.allows("https://localhost:3000")) << "another scheme is another origin";
  EXPECT_FALSE(p.allows("http://localhost.evil.com"));
  EXPECT_FALSE(p.allows("http://127.0.0.1.evil.com:80"));
  EXPECT_FALSE(p.allows("http://example.com"));
  EXPECT_FALSE(p.allows("null")) << "sandboxed frames and file:// pages";
  EXPECT_FALSE(p.allows(""));
}

TEST(CorsPolicy, ExactOriginsPortPatternsAndAny) {
  CorsPolicy p("https://app.example.com, http://dev.example.com:*/");
  EXPECT_TRUE(p.allows("https://app.example.com"));
  EXPECT_FALSE(p.allows("https://app.example.com:8443")) << "an exact entry names its port";
  EXPECT_TRUE(p.allows("http://dev.example.com:9000"));
  EXPECT_FALSE(p.allows("http://localhost:3000")) << "a list replaces the default";
  EXPECT_TRUE(CorsPolicy("*").allows("https://anything.example"));
  EXPECT_FALSE(CorsPolicy("").allows("http://localhost:3000")) << "empty: none";
}

TEST(CorsPolicy, PreflightEchoesTheRequestedHeaders) {
  CorsPolicy p(kLoopbackOrigins);
  auto h = as_map(
      p.preflight_headers("http://localhost:3000", "authorization,content-type,x-stainless-os"));
  EXPECT_EQ(h["Access-Control-Allow-Origin"], "http://localhost:3000");
  EXPECT_EQ(h["Access-Control-Allow-Headers"], "authorization,content-type,x-stainless-os");
  EXPECT_EQ(h["Access-Control-Allow-Methods"], "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(h["Access-Control-Max-Age"], "7200");
  EXPECT_NE(h["Vary"].find("Origin"), std::string::npos);
  auto d = as_map(p.preflight_headers("http://localhost:3000", ""));
  for (const char* name : {"Authorization", "x-api-key", "anthropic-version", "Content-Type"}) {
    EXPECT_NE(d["Access-Control-Allow-Headers"].find(name), std::string::npos) << name;
  }
  auto r = as_map(p.response_headers("http://localhost:3000"));
  EXPECT_EQ(r["Access-Control-Allow-Origin"], "http://localhost:3000");
  EXPECT_EQ(r["Vary"], "Origin");
}

}  // namespace
}  // namespace recur::server
