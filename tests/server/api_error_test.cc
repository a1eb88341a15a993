#include "server/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace recur::server {
namespace {

TEST(ApiError, OpenAiShape) {
  auto j =
      nlohmann::json::parse(invalid_request("messages", "messages must be an array").to_json());
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "messages must be an array");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_TRUE(j["error"]["code"].is_null());
}

TEST(ApiError, StatusesMapToHttpCodes) {
  EXPECT_EQ(invalid_request("x", "y").http_status, 400);
  EXPECT_EQ(unauthorized("no").http_status, 401);
  EXPECT_EQ(not_found("no").http_status, 404);
  EXPECT_EQ(payload_too_large(10).http_status, 413);
  ApiError busy = overloaded("queue full", 2);
  EXPECT_EQ(busy.http_status, 503);
  EXPECT_EQ(busy.retry_after_s, 2);
  EXPECT_EQ(from_status(Status(StatusCode::kOutOfRange, "prompt has 9000 tokens"), "messages")
                .http_status,
            400);
  EXPECT_EQ(from_status(Status(StatusCode::kInternal, "bug")).http_status, 500);
}

TEST(ApiError, InvalidUtf8InMessageStillGivesValidJson) {
  std::string msg = "bad byte \xff here";
  auto text = invalid_request("", msg).to_json();
  auto j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
}

TEST(ErrorShape, AnthropicUnderMessagesWithOrWithoutV1) {
  for (const char* path :
       {"/v1/messages", "/v1/messages/count_tokens", "/messages", "/messages/count_tokens"}) {
    EXPECT_EQ(error_shape_for_path(path), ErrorShape::kAnthropic) << path;
  }
  for (const char* path : {"/v1/chat/completions", "/chat/completions", "/v1/responses",
                           "/v1/messagesx", "/v1/models", "/messages_x"}) {
    EXPECT_EQ(error_shape_for_path(path), ErrorShape::kOpenAI) << path;
  }
}

}  // namespace
}  // namespace recur::server
