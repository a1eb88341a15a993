// A generated turn's text taken apart the way the model writes it: the reasoning block (<think>,
// chat/reasoning.h) split from the content, then tool calls in the content (tool_calls.h), which
// a stream holds back as they start and which are parsed once generation ends; or, for a template
// that writes harmony (gpt-oss), its messages (chat/harmony.h: analysis is reasoning, final and
// preambles content, messages to functions.* tool calls). The one place that knows in which order
// the parsers see the text. Not the wire format (the renderers') nor the tokens' logprobs
// (TokenSections). Thread-compatible: one per turn.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/harmony.h"
#include "chat/message.h"
#include "chat/reasoning.h"
#include "server/tool_calls.h"

namespace recur::server {

struct ReplyFormat {
  bool split_reasoning = false;      // the template knows reasoning blocks
  bool starts_in_reasoning = false;  // the prompt ended inside one
  bool parse_tools = false;          // tools declared, and tool_choice is not "none"
  // The template writes harmony: the text pushed has its markers spelled out (MarkedText), and
  // harmony_tail is what the prompt wrote of the first message (chat::harmony_prompt_tail).
  bool harmony = false;
  std::string harmony_tail = "assistant";
};

// What one piece of generated text added.
struct ReplyPart {
  std::string reasoning;
  std::string content;         // all of it, a possible tool call included
  std::string stream_content;  // the part of the content a stream may send now
};

// The reply once generation ended.
struct ParsedReply {
  std::string content;  // outside the tool calls
  // Set when the text was split and had a reasoning block (maybe empty).
  std::optional<std::string> reasoning;
  std::vector<chat::ToolCall> tool_calls;
  // Content a stream held back as a possible tool call that turned out to be text, or that
  // followed the calls.
  std::string unstreamed_content;
};

class ReplyParser {
 public:
  explicit ReplyParser(ReplyFormat format);
  // The next generated text; `last`: generation ended, so what was held back comes out.
  ReplyPart push(std::string_view text, bool last);
  // The reply has a reasoning block, maybe still empty (APIs with reasoning blocks open one).
  bool has_reasoning_block() const {
    return harmony_ ? harmony_->saw_reasoning()
                    : format_.split_reasoning && splitter_.saw_reasoning();
  }
  // Everything so far, before tool-call parsing.
  const std::string& reasoning() const { return reasoning_; }
  const std::string& content() const { return content_; }
  // After the last push. tools_json: the request's tools (parameter types); call ids are
  // `call_id_prefix` and the call's index.
  ParsedReply finish(std::string_view tools_json, std::string_view call_id_prefix) const;

  // Harmony only (empty otherwise): where the content lies in the text pushed, how much of it is
  // classified, and the reasoning messages' spans (their headers and markers included).
  std::span<const chat::TextSpan> content_spans() const;
  std::size_t settled() const;
  std::vector<chat::TextSpan> reasoning_spans() const;

 private:
  ParsedReply finish_harmony(std::string_view call_id_prefix) const;

  ReplyFormat format_;
  std::optional<chat::HarmonyParser> harmony_;
  chat::ReasoningSplitter splitter_;
  ToolCallStreamFilter filter_;
  std::string reasoning_;
  std::string content_;
};

}  // namespace recur::server
