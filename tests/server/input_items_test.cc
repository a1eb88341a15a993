// GET /v1/responses/{id}/input_items: the query's checks and the pages of a stored input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/responses_input_items.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

const char* kInput = R"([
  {"type": "message", "role": "user", "content": "one"},
  {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
  {"type": "function_call_output", "call_id": "call_1", "output": "x"},
  {"id": "msg_client", "type": "message", "role": "user", "content": "two"}])";

json page(std::string_view input, const std::map<std::string, std::string>& query) {
  auto q = parse_input_items_query(query);
  EXPECT_TRUE(std::holds_alternative<InputItemsQuery>(q));
  auto p = input_items_page(input, "tok", std::get<InputItemsQuery>(q));
  EXPECT_TRUE(std::holds_alternative<std::string>(p)) << std::get<ApiError>(p).message;
  return json::parse(std::get<std::string>(p));
}

std::vector<std::string> ids(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list["data"]) out.push_back(item["id"]);
  return out;
}

TEST(InputItems, NewestFirstByDefaultWithIdsForItemsSentWithout) {
  json p = page(kInput, {});
  EXPECT_EQ(p["object"], "list");
  EXPECT_EQ(ids(p), (std::vector<std::string>{"msg_client", "fco_tok_2", "fc_tok_1", "msg_tok_0"}));
  EXPECT_EQ(p["first_id"], "msg_client");
  EXPECT_EQ(p["last_id"], "msg_tok_0");
  EXPECT_EQ(p["has_more"], false);
  EXPECT_EQ(p["data"][3]["content"], "one") << "items as the client sent them";
  EXPECT_EQ(p["data"][3].begin().key(), "id") << "the id leads";
}

TEST(InputItems, PagesWithLimitAndAfterInEitherOrder) {
  json first = page(kInput, {{"order", "asc"}, {"limit", "2"}});
  EXPECT_EQ(ids(first), (std::vector<std::string>{"msg_tok_0", "fc_tok_1"}));
  EXPECT_EQ(first["has_more"], true);
  json second = page(kInput, {{"order", "asc"}, {"limit", "2"}, {"after", "fc_tok_1"}});
  EXPECT_EQ(ids(second), (std::vector<std::string>{"fco_tok_2", "msg_client"}));
  EXPECT_EQ(second["has_more"], false);
  json desc = page(kInput, {{"limit", "1"}, {"after", "fco_tok_2"}});
  EXPECT_EQ(ids(desc), (std::vector<std::string>{"fc_tok_1"}));
  json end = page(kInput, {{"after", "msg_tok_0"}});
  EXPECT_TRUE(end["data"].empty());
  EXPECT_EQ(end["first_id"], nullptr);
  EXPECT_EQ(end["has_more"], false);
}

TEST(InputItems, AStringInputIsOneUserMessage) {
  json p = page(R"("hello")", {});
  ASSERT_EQ(p["data"].size(), 1u);
  EXPECT_EQ(p["data"][0], json::parse(R"({"id": "msg_tok_0", "type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": "hello"}]})"));
}

TEST(InputItems, BadQueriesAre400sNamingTheParameter) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"order", "newest"}, {"limit", "0"}, {"limit", "101"}, {"limit", "2x"}, {"limit", ""}}) {
    auto q = parse_input_items_query({{name, value}});
    ASSERT_TRUE(std::holds_alternative<ApiError>(q)) << name << "=" << value;
    EXPECT_EQ(std::get<ApiError>(q).http_status, 400);
    EXPECT_EQ(std::get<ApiError>(q).param, name);
  }
  auto p = input_items_page(kInput, "tok", {.after = "msg_nope"});
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  EXPECT_EQ(std::get<ApiError>(p).param, "after");
  EXPECT_NE(std::get<ApiError>(p).message.find("msg_nope"), std::string::npos);
}

}  // namespace
}  // namespace recur::server
