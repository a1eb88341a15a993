// What a model's chat template can express, found once by trial renders with sentinel texts, and
// the rewriting of a parsed message list into shapes the template can express: text parts joined,
// null content made "", developer turned system, system messages the template cannot place merged
// into a user turn, runs of one role merged, tool calls and results written as text, several calls
// of one message made one message each, content beside reasoning and calls moved into the
// reasoning. Messages the template takes as they are pass through untouched, so such renderings
// stay byte-identical with Hugging Face's apply_chat_template. Not a template engine: it renders
// only through a callback.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/message.h"

namespace recur::chat {

// Every flag means: the template renders this shape and every text of it appears in the output.
struct TemplateCaps {
  bool system_role = false;              // a leading system message
  bool system_after_first = false;       // a system message after the conversation started
  bool developer_role = false;           // developer rendered as a role of its own, not generically
  bool typed_content_system = false;     // [{type: text, text}] parts print as their text
  bool typed_content_user = false;       //   (one part renders exactly as the same string,
  bool typed_content_assistant = false;  //   two parts show both texts)
  bool typed_content_tool = false;
  bool null_content_with_tool_calls = false;  // an assistant's content null beside tool calls
  bool tool_calls = false;                    // an assistant's tool calls (the name is printed)
  bool object_arguments = true;  // tool-call arguments given as an object (else as JSON text)
  bool tool_responses = false;   // tool messages
  bool consecutive_users = false;
  bool consecutive_assistants = false;
  // How messages are handed to the template, not what it can express: past reasoning under the
  // key `thinking` (gpt-oss's template) rather than `reasoning_content` (Qwen3's and most others).
  bool thinking_key = false;
  bool developer_after_first = true;  // with developer_role: a developer message not first
  bool several_tool_calls = true;     // with tool_calls: every call of one message is printed
  // With tool_calls: an assistant message with calls may have both text and reasoning (gpt-oss's
  // refuses: its text is the analysis, as reasoning is).
  bool tool_call_content_and_reasoning = true;
  // A declared tool without a description renders (gpt-oss's prints "// " + description, which
  // fails on a missing one): else the tool is handed over with an empty one.
  bool tools_without_description = true;

  bool typed_content(std::string_view role) const;
  // "system_role=1 developer_role=0 ...": the startup log line.
  std::string to_string() const;
};

// Renders messages through the template without a generation prompt; nullopt when it fails.
// `form`'s object_arguments (tool-call arguments as objects, else as the JSON text the client
// sent) and thinking_key say how the messages are handed to it; tools_json: declared tools ("" for
// none).
using ProbeRender = std::function<std::optional<std::string>(
    std::span<const Message>, const TemplateCaps& form, std::string_view tools_json)>;

// Trial renders of small conversations with sentinel texts (about twenty renders).
TemplateCaps detect_caps(const ProbeRender& render);

// Separators of what normalisation joins: text parts of one message (as vLLM joins them for
// string-only templates), and messages merged into one turn.
inline constexpr std::string_view kPartSeparator = "\n";
inline constexpr std::string_view kMergeSeparator = "\n\n";

// The messages rewritten into shapes `caps` can express. Deterministic, and a message's rewrite
// depends only on itself, the messages before it and the role of the one after it (a user
// message or not), so appending an assistant reply and what follows it never changes how the
// earlier history renders: the prompt cache reuses it. One exception: where a template prints one
// call per message, a message with several calls is followed by the results that answer each
// call, so the results coming in re-order it from its second call on (gpt-oss never writes
// several; a client replaying another model's parallel calls does).
std::vector<Message> normalize_messages(std::span<const Message> messages,
                                        const TemplateCaps& caps);

}  // namespace recur::chat
