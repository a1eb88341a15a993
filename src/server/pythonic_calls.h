// LFM2's tool-call body: a Python list of calls with keyword arguments,
//   [get_weather(location="Paris", days=3), get_time(zone='UTC')]
// (what LFM2 / LFM2.5 write between <|tool_call_start|> and <|tool_call_end|>), turned into
// OpenAI tool calls whose arguments are JSON: strings, numbers, True / False / None, lists,
// tuples and dicts of those. Anything else (positional arguments, expressions, a nesting deeper
// than 64) is not a call list: nullopt, and the caller keeps the text.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "chat/message.h"

namespace recur::server {

std::optional<std::vector<chat::ToolCall>> parse_pythonic_calls(std::string_view text);

}  // namespace recur::server
