#include "server/unsupported_tools.h"

#include <fmt/format.h>

#include <algorithm>

namespace recur::server {

std::optional<ApiError> leave_out_tool(UnsupportedTools policy, const std::string& at,
                                       const std::string& label,
                                       std::vector<std::string>& dropped) {
  if (policy == UnsupportedTools::kReject) {
    return invalid_request(at,
                           fmt::format("tool '{}' ({}) cannot be run by this server: only "
                                       "function tools the client runs itself are supported "
                                       "(without --reject-unsupported-tools such tools are left "
                                       "out of the prompt)",
                                       label, at),
                           "unsupported_tool");
  }
  dropped.push_back(label);
  return std::nullopt;
}

std::string dropped_tools_header(const std::vector<std::string>& dropped) {
  std::vector<std::string> once;
  for (const auto& d : dropped) {
    if (std::find(once.begin(), once.end(), d) == once.end()) once.push_back(d);
  }
  // Labels come from request fields: keep the header one printable line.
  std::string out;
  for (const auto& d : once) {
    if (!out.empty()) out += ", ";
    for (char c : d) out += (c >= 0x20 && c < 0x7f && c != ',') ? c : '_';
  }
  return out;
}

}  // namespace recur::server
