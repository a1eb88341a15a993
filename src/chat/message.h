// Typed chat messages: what server/ parses OpenAI requests into and what chat/ renders through the
// template. No JSON past this boundary except tool schemas and tool-call arguments, which stay
// JSON text because templates print them back (tojson) and recur never interprets them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace recur::chat {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;  // the function arguments as JSON text (an object, usually)
};

struct ContentPart {
  std::string type = "text";  // only text parts are supported
  std::string text;
};

struct Message {
  std::string role;  // system, developer, user, assistant, tool
  // Exactly one of: content as a plain string, content as parts, or no content (null/absent).
  std::optional<std::string> content;
  std::vector<ContentPart> content_parts;
  bool content_is_parts = false;
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;
  std::optional<std::string> tool_call_id;
  std::optional<std::string> name;

  // The text of the content: the string, or the parts joined without separator.
  std::string text() const {
    if (!content_is_parts) return content.value_or("");
    std::string out;
    for (const auto& p : content_parts) out += p.text;
    return out;
  }
};

// Where a client marked the end of a prefix it will send again (Anthropic cache_control): after
// the first `content_bytes` bytes of messages[message]'s text; 0 bytes: just before that message.
struct CacheBreakpoint {
  std::size_t message = 0;
  std::size_t content_bytes = 0;
  bool operator==(const CacheBreakpoint&) const = default;
};

}  // namespace recur::chat
