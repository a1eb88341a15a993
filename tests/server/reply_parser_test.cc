// A turn's generated text through the reasoning split and the tool-call parsing together, as a
// model writes it, in pieces of every size: what a stream sends as it goes and what the finished
// reply holds.
#include "server/reply_parser.h"

#include <gtest/gtest.h>

namespace recur::server {
namespace {

const char* kTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{
  "type":"object","properties":{"city":{"type":"string"}}}}}])";

struct Streamed {
  std::string reasoning, content, stream_content;
  ParsedReply reply;
};

Streamed parse_in_pieces(ReplyFormat format, std::string_view text, std::size_t piece) {
  ReplyParser parser(format);
  Streamed out;
  for (std::size_t at = 0; at < text.size(); at += piece) {
    const bool last = at + piece >= text.size();
    ReplyPart part = parser.push(text.substr(at, piece), last);
    out.reasoning += part.reasoning;
    out.content += part.content;
    out.stream_content += part.stream_content;
  }
  EXPECT_EQ(out.reasoning, parser.reasoning());
  EXPECT_EQ(out.content, parser.content());
  out.reply = parser.finish(kTools, "call_");
  return out;
}

TEST(ReplyParser, ReasoningThenAToolCallHeldFromTheStream) {
  const std::string text =
      "<think>\nIt is cold there?\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": "
      "\"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  for (std::size_t piece : {1, 3, 7, 1000}) {
    Streamed s = parse_in_pieces(
        {.split_reasoning = true, .starts_in_reasoning = false, .parse_tools = true}, text, piece);
    EXPECT_EQ(s.reasoning, "It is cold there?") << piece;
    EXPECT_EQ(s.stream_content, "Let me check.\n") << piece;
    ASSERT_TRUE(s.reply.reasoning.has_value());
    EXPECT_EQ(*s.reply.reasoning, "It is cold there?");
    EXPECT_EQ(s.reply.content, "Let me check.");
    ASSERT_EQ(s.reply.tool_calls.size(), 1u);
    EXPECT_EQ(s.reply.tool_calls[0].id, "call_0");
    EXPECT_EQ(s.reply.tool_calls[0].arguments_json, R"({"city":"Oslo"})");
    EXPECT_EQ(s.reply.unstreamed_content, "");
  }
}

TEST(ReplyParser, AHeldReplyThatIsNoCallIsStillToSend) {
  // Llama's call form has no tag: a reply that starts with "{" is held whole, and is text when it
  // names no tool.
  const std::string text = "{\"answer\": 42}";
  for (std::size_t piece : {1, 4, 1000}) {
    Streamed s = parse_in_pieces({.parse_tools = true}, text, piece);
    EXPECT_EQ(s.stream_content, "") << piece;
    EXPECT_TRUE(s.reply.tool_calls.empty());
    EXPECT_EQ(s.reply.content, text);
    EXPECT_EQ(s.reply.unstreamed_content, text);
    EXPECT_FALSE(s.reply.reasoning.has_value());
  }
}

TEST(ReplyParser, WithoutToolsAndReasoningEverythingIsContent) {
  const std::string text = "<think>x</think> <tool_call>{}</tool_call>";
  Streamed s = parse_in_pieces({}, text, 5);
  EXPECT_EQ(s.stream_content, text);
  EXPECT_EQ(s.reply.content, text);
  EXPECT_FALSE(s.reply.reasoning.has_value());
  EXPECT_TRUE(s.reply.tool_calls.empty());
}

TEST(ReplyParser, AnEmptyReasoningBlockIsKept) {
  // The prompt opened the block and the model closed it at once.
  ReplyParser parser({.split_reasoning = true, .starts_in_reasoning = true});
  EXPECT_TRUE(parser.has_reasoning_block());
  parser.push("</think>\n\nHi", true);
  ParsedReply r = parser.finish("", "call_");
  ASSERT_TRUE(r.reasoning.has_value());
  EXPECT_EQ(*r.reasoning, "");
  EXPECT_EQ(r.content, "Hi");
}

}  // namespace
}  // namespace recur::server
