// Tool calls in generated text, in the forms Qwen and Llama models emit:
//   Qwen3:   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   Qwen3.5:
//   <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
//   Llama 3.x: the whole reply is {"name": "f", "parameters": {...}} (optionally after
//   <|python_tag|>; several calls separated by ";"), the name one of the request's tools
//   LFM2:    <|tool_call_start|>[f(a=1, b="x")]<|tool_call_end|> (pythonic_calls.h), text
//   before and after it; or the bare [f(...)] list as the whole reply, naming request tools
// parsed into OpenAI tool calls. Anything malformed stays text: a tool call is never lost.
// Also the streaming side: text before the first <tool_call> flows out as content, the rest is
// held until the end (also from LFM2's <|tool_call_start|>); a reply that starts with "{", "["
// or "<|python_tag|>" is held whole.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/message.h"

namespace recur::server {

struct ParsedToolCalls {
  std::string content;  // text outside the tool calls (trailing whitespace before them trimmed)
  std::vector<chat::ToolCall> calls;
  // Text after the last call (LFM2 writes its words after the call): in a stream it was held
  // with the call, so it is still to be sent.
  std::string trailing;
};

// tools_json: the request's tool definitions; parameter types from their JSON schemas decide
// whether an XML parameter value is a string or JSON ("42" for an integer parameter is 42).
// id_prefix: call ids are id_prefix + index.
ParsedToolCalls parse_tool_calls(std::string_view text, std::string_view tools_json,
                                 std::string_view id_prefix);

// Feeds content deltas; returns what can be sent as content now. Once "<tool_call>" starts, the
// rest is held for parse_tool_calls at the end; a possible start of it is held back meanwhile. A
// reply whose first non-blank text is "{" or "<|python_tag|>" (Llama's form) is held from its
// start: whether it is a call is known only at the end.
class ToolCallStreamFilter {
 public:
  std::string push(std::string_view delta);
  // Everything held back (the tool-call part, or a partial tag that never completed).
  std::string held() const { return held_; }
  bool in_tool_call() const { return in_call_; }
  // All content text seen so far, streamed or held.
  const std::string& all_text() const { return all_; }

 private:
  std::string held_;
  std::string all_;
  bool in_call_ = false;
  bool past_start_ = false;  // the reply's first non-blank text was seen and is not Llama's form
};

}  // namespace recur::server
