// Whose conversation a request is in: the tenant of its API key and the session it names, which
// key its cache entries (and, on /v1/responses, the responses it stores).
#include <gtest/gtest.h>

#include "server/service.h"

namespace recur::server {
namespace {

TEST(Conversation, PromptCacheKeyNamesTheSessionBeforeTheHeader) {
  HttpRequest http;
  GenerationFields gen;
  EXPECT_EQ(session_name(http, gen), "");
  http.headers["x-session-id"] = "from-header";
  EXPECT_EQ(session_name(http, gen), "from-header");
  gen.prompt_cache_key = "from-body";
  EXPECT_EQ(session_name(http, gen), "from-body");
  // `user` is a session of its own kind (cache::SessionKey), not a session name.
  GenerationFields user_only{.user = "u1"};
  EXPECT_EQ(session_name(HttpRequest{}, user_only), "");
}

TEST(Conversation, TenantIsTheApiKeysIdentity) {
  HttpRequest http;
  http.headers["authorization"] = "Bearer sk-1";
  http.headers["x-session-id"] = "s";
  const Conversation c = conversation_of(http, GenerationFields{});
  EXPECT_EQ(c.tenant, api_key_identity(http));
  EXPECT_FALSE(c.tenant.empty());
  EXPECT_EQ(c.session, "s");
  EXPECT_EQ(conversation_of(HttpRequest{}, GenerationFields{}).tenant, "");
}

}  // namespace
}  // namespace recur::server
