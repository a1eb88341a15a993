// Tools a client declares that recur cannot run: OpenAI's hosted tools (web_search, file_search,
// code_interpreter, computer use, image_generation, remote mcp, custom tools, ...) and Anthropic's
// server and Anthropic-defined tools (web_search_*, code_execution_*, bash_*, text_editor_*, ...).
// Coding agents declare some of them on every request, so by default they are left out of the
// prompt (the model is never offered them and cannot call them) and named in the
// X-Recur-Dropped-Tools response header and the server log; --reject-unsupported-tools makes each
// a 400 naming the tool instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace recur::server {

inline constexpr const char* kDroppedToolsHeader = "X-Recur-Dropped-Tools";

enum class UnsupportedTools { kLeaveOut, kReject };

// The tool at `at` (its label says which: "web_search", "mcp:github", ...) cannot be run:
// remembered in `dropped`, or the 400 when the policy rejects.
std::optional<ApiError> leave_out_tool(UnsupportedTools policy, const std::string& at,
                                       const std::string& label, std::vector<std::string>& dropped);

// The header's value: the labels, comma-separated, each once, in the order first seen.
std::string dropped_tools_header(const std::vector<std::string>& dropped);

}  // namespace recur::server
