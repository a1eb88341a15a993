#include "server/tool_calls.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "server/pythonic_calls.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kLfmOpen = "<|tool_call_start|>";
constexpr std::string_view kLfmClose = "<|tool_call_end|>";
// Tags that open a held tool-call part in a stream.
constexpr std::string_view kOpenTags[] = {kOpen, kLfmOpen};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The JSON-schema type of a tool's parameter, or "" when unknown.
std::string param_type(const json& tools, std::string_view fn, std::string_view param) {
  if (!tools.is_array()) return "";
  for (const auto& t : tools) {
    if (!t.is_object() || !t.contains("function")) continue;
    const auto& f = t["function"];
    if (!f.is_object() || !f.contains("name") || f["name"] != fn) continue;
    if (!f.contains("parameters") || !f["parameters"].is_object()) return "";
    const auto& props = f["parameters"].value("properties", json::object());
    if (!props.is_object() || !props.contains(std::string(param))) return "";
    const auto& p = props[std::string(param)];
    if (p.is_object() && p.contains("type") && p["type"].is_string()) return p["type"];
    return "";
  }
  return "";
}

// {"name": ..., "arguments": {...}}
std::optional<chat::ToolCall> parse_json_call(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return std::nullopt;
  }
  chat::ToolCall call;
  call.name = j["name"];
  if (!j.contains("arguments") || j["arguments"].is_null()) {
    call.arguments_json = "{}";
  } else if (j["arguments"].is_string()) {
    call.arguments_json = j["arguments"].get<std::string>();
  } else {
    call.arguments_json = j["arguments"].dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return call;
}

// <function=NAME>\n<parameter=P>\nVALUE\n</parameter>...\n</function>
std::optional<chat::ToolCall> parse_xml_call(std::string_view body, const json& tools) {
  constexpr std::string_view kFn = "<function=";
  if (body.substr(0, kFn.size()) != kFn) return std::nullopt;
  size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  chat::ToolCall call;
  call.name = std::string(trim(body.substr(kFn.size(), name_end - kFn.size())));
  if (call.name.empty()) return std::nullopt;
  std::string_view rest = body.substr(name_end + 1);
  size_t fn_end = rest.rfind("</function>");
  if (fn_end == std::string_view::npos) return std::nullopt;
  if (!trim(rest.substr(fn_end + 11)).empty()) return std::nullopt;
  rest = rest.substr(0, fn_end);
  json args = json::object();
  constexpr std::string_view kParam = "<parameter=";
  constexpr std::string_view kParamEnd = "</parameter>";
  for (;;) {
    rest = trim(rest);
    if (rest.empty()) break;
    if (rest.substr(0, kParam.size()) != kParam) return std::nullopt;
    size_t pname_end = rest.find('>');
    if (pname_end == std::string_view::npos) return std::nullopt;
    std::string pname(trim(rest.substr(kParam.size(), pname_end - kParam.size())));
    std::string_view after = rest.substr(pname_end + 1);
    size_t vend = after.find(kParamEnd);
    if (pname.empty() || vend == std::string_view::npos) return std::nullopt;
    std::string_view value = after.substr(0, vend);
    // The template writes "\n" + value + "\n" around a value.
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    std::string type = param_type(tools, call.name, pname);
    json parsed = type == "string" ? json() : json::parse(value, nullptr, false);
    if (type == "string" || parsed.is_discarded()) {
      args[pname] = std::string(value);
    } else {
      args[pname] = std::move(parsed);
    }
    rest = after.substr(vend + kParamEnd.size());
  }
  call.arguments_json = args.dump(-1, ' ', false, json::error_handler_t::replace);
  return call;
}

bool has_tool(const json& tools, std::string_view fn) {
  if (!tools.is_array()) return false;
  for (const auto& t : tools) {
    if (t.is_object() && t.contains("function") && t["function"].is_object() &&
        t["function"].contains("name") && t["function"]["name"] == fn) {
      return true;
    }
  }
  return false;
}

// The end (one past the closing brace) of the JSON object that starts at s[0] == '{', or npos.
size_t object_end(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Llama 3.x: the whole reply is one or more {"name": ..., "parameters": {...}} objects (the
// template writes "parameters"; "arguments" is accepted too), separated by ";", optionally after
// <|python_tag|>. A name that is not one of the request's tools leaves the reply as text: a JSON
// answer is not a call.
std::vector<chat::ToolCall> parse_llama_calls(std::string_view text, const json& tools) {
  std::string_view rest = trim(text);
  if (rest.starts_with(kPythonTag)) rest = trim(rest.substr(kPythonTag.size()));
  std::vector<chat::ToolCall> calls;
  while (!rest.empty()) {
    if (rest.front() != '{') return {};
    const size_t end = object_end(rest);
    if (end == std::string_view::npos) return {};
    json j = json::parse(rest.substr(0, end), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string() ||
        !has_tool(tools, j["name"].get<std::string>())) {
      return {};
    }
    const char* args_key = j.contains("parameters") ? "parameters" : "arguments";
    const json args = j.contains(args_key) ? j[args_key] : json::object();
    if (!args.is_object()) return {};
    calls.push_back({.name = j["name"].get<std::string>(),
                     .arguments_json = args.dump(-1, ' ', false, json::error_handler_t::replace)});
    rest = trim(rest.substr(end));
    if (!rest.empty() && rest.front() == ';') rest = trim(rest.substr(1));
  }
  return calls;
}

bool all_tools(const std::vector<chat::ToolCall>& calls, const json& tools) {
  for (const auto& c : calls) {
    if (!has_tool(tools, c.name)) return false;
  }
  return !calls.empty();
}

// LFM2: <|tool_call_start|>[f(a=1), g()]<|tool_call_end|> blocks, text before and after them
// (LFM2 usually writes its words after the call). The content is the text with the blocks taken
// out; a block that does not parse leaves the whole reply as text.
std::optional<ParsedToolCalls> parse_lfm2_calls(std::string_view text) {
  ParsedToolCalls out;
  std::string_view rest = text;
  std::string outside;
  while (true) {
    const size_t open = rest.find(kLfmOpen);
    if (open == std::string_view::npos) break;
    const size_t close = rest.find(kLfmClose, open);
    if (close == std::string_view::npos) return std::nullopt;
    outside.append(rest.substr(0, open));
    const std::string_view body =
        rest.substr(open + kLfmOpen.size(), close - open - kLfmOpen.size());
    auto calls = parse_pythonic_calls(trim(body));
    if (!calls) return std::nullopt;
    for (auto& c : *calls) out.calls.push_back(std::move(c));
    rest = rest.substr(close + kLfmClose.size());
  }
  outside.append(rest);
  out.content = std::string(trim(outside));
  out.trailing = std::string(trim(rest));
  return out;
}

}  // namespace

ParsedToolCalls parse_tool_calls(std::string_view text, std::string_view tools_json,
                                 std::string_view id_prefix) {
  ParsedToolCalls out;
  json tools = tools_json.empty() ? json() : json::parse(tools_json, nullptr, false);
  if (text.find(kLfmOpen) != std::string_view::npos) {
    auto lfm = parse_lfm2_calls(text);
    if (!lfm) return {.content = std::string(text)};
    for (size_t i = 0; i < lfm->calls.size(); ++i) {
      lfm->calls[i].id = fmt::format("{}{}", id_prefix, i);
    }
    return std::move(*lfm);
  }
  size_t first = text.find(kOpen);
  if (first == std::string_view::npos) {
    // LFM2's call list without its markers (a tokenizer that marks them special drops them in
    // decoding): the whole reply, every name a tool of the request.
    if (auto bare = parse_pythonic_calls(trim(text)); bare && all_tools(*bare, tools)) {
      out.calls = std::move(*bare);
      for (size_t i = 0; i < out.calls.size(); ++i) {
        out.calls[i].id = fmt::format("{}{}", id_prefix, i);
      }
      return out;
    }
    out.calls = parse_llama_calls(text, tools);
    for (size_t i = 0; i < out.calls.size(); ++i) {
      out.calls[i].id = fmt::format("{}{}", id_prefix, i);
    }
    if (out.calls.empty()) out.content = std::string(text);
    return out;
  }
  std::string_view rest = text.substr(first);
  std::vector<chat::ToolCall> calls;
  while (!rest.empty()) {
    rest = trim(rest);
    if (rest.empty()) break;
    if (rest.substr(0, kOpen.size()) != kOpen) break;
    size_t close = rest.find(kClose);
    if (close == std::string_view::npos) break;
    std::string_view body = trim(rest.substr(kOpen.size(), close - kOpen.size()));
    auto call =
        body.starts_with("<function=") ? parse_xml_call(body, tools) : parse_json_call(body);
    if (!call) break;
    call->id = fmt::format("{}{}", id_prefix, calls.size());
    calls.push_back(std::move(*call));
    rest = rest.substr(close + kClose.size());
  }
  if (calls.empty() || !trim(rest).empty()) {
    // Malformed or followed by more text: keep everything as text rather than lose any of it.
    out.content = std::string(text);
    return out;
  }
  std::string_view before = text.substr(0, first);
  while (!before.empty() && std::isspace(static_cast<unsigned char>(before.back()))) {
    before.remove_suffix(1);
  }
  out.content = std::string(before);
  out.calls = std::move(calls);
  return out;
}

std::string ToolCallStreamFilter::push(std::string_view delta) {
  all_.append(delta);
  if (in_call_) {
    held_.append(delta);
    return "";
  }
  held_.append(delta);
  if (!past_start_) {
    // Llama's form has no opening tag: a reply that starts like a call is held from its start.
    std::string_view head = trim(held_);
    if (head.empty()) return "";
    const bool brace = head.front() == '{' || head.front() == '[';
    const size_t n = std::min(head.size(), kPythonTag.size());
    if (brace || head.substr(0, n) == kPythonTag.substr(0, n)) {
      if (brace || n == kPythonTag.size()) in_call_ = true;
      return "";
    }
    past_start_ = true;
  }
  size_t open = std::string::npos;
  for (std::string_view tag : kOpenTags) open = std::min(open, held_.find(tag));
  if (open != std::string::npos) {
    in_call_ = true;
    std::string out = held_.substr(0, open);
    held_.erase(0, open);
    return out;
  }
  // Hold back the longest suffix that could be the start of an opening tag.
  size_t keep = 0;
  for (std::string_view tag : kOpenTags) {
    for (size_t n = std::min(held_.size(), tag.size() - 1); n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == tag.substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace recur::server
