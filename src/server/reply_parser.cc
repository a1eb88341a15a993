#include "server/reply_parser.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace recur::server {
namespace {

// A harmony message to a function as an OpenAI tool call: "functions.get_weather" names
// get_weather (other recipients are names as they are); the body must be a JSON object.
std::optional<chat::ToolCall> harmony_call(const chat::HarmonyMessage& m) {
  constexpr std::string_view kFunctions = "functions.";
  std::string_view name = m.recipient;
  if (name.starts_with(kFunctions)) name.remove_prefix(kFunctions.size());
  const auto args = nlohmann::ordered_json::parse(m.body, nullptr, false);
  if (name.empty() || args.is_discarded() || !args.is_object()) return std::nullopt;
  return chat::ToolCall{.name = std::string(name),
                        .arguments_json = args.dump(
                            -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)};
}

}  // namespace

ReplyParser::ReplyParser(ReplyFormat format)
    : format_(std::move(format)), splitter_(format_.starts_in_reasoning) {
  if (format_.harmony) harmony_.emplace(format_.harmony_tail);
}

ReplyPart ReplyParser::push(std::string_view text, bool last) {
  if (harmony_) {
    chat::HarmonyDelta d = harmony_->push(text);
    if (last) {
      chat::HarmonyDelta tail = harmony_->finish();
      d.reasoning += tail.reasoning;
      d.content += tail.content;
    }
    reasoning_ += d.reasoning;
    content_ += d.content;
    // Tool calls never reach the content: they are messages of their own.
    return {.reasoning = std::move(d.reasoning), .content = d.content, .stream_content = d.content};
  }
  chat::SplitText split =
      format_.split_reasoning ? splitter_.push(text) : chat::SplitText{{}, std::string(text)};
  if (last && format_.split_reasoning) {
    chat::SplitText tail = splitter_.finish();
    split.reasoning += tail.reasoning;
    split.content += tail.content;
  }
  reasoning_ += split.reasoning;
  content_ += split.content;
  ReplyPart part{.reasoning = std::move(split.reasoning), .content = std::move(split.content)};
  part.stream_content = format_.parse_tools ? filter_.push(part.content) : part.content;
  return part;
}

ParsedReply ReplyParser::finish(std::string_view tools_json,
                                std::string_view call_id_prefix) const {
  if (harmony_) return finish_harmony(call_id_prefix);
  ParsedReply r;
  if (format_.parse_tools) {
    ParsedToolCalls calls = parse_tool_calls(content_, tools_json, call_id_prefix);
    r.content = std::move(calls.content);
    r.unstreamed_content = calls.calls.empty() ? filter_.held() : std::move(calls.trailing);
    r.tool_calls = std::move(calls.calls);
  } else {
    r.content = content_;
  }
  if (format_.split_reasoning && (splitter_.saw_reasoning() || !reasoning_.empty())) {
    r.reasoning = reasoning_;
  }
  return r;
}

ParsedReply ReplyParser::finish_harmony(std::string_view call_id_prefix) const {
  // Harmony's arguments are JSON the model typed: the request's tools decide nothing here.
  ParsedReply r;
  std::string unstreamed;
  for (const chat::HarmonyMessage& m : harmony_->messages()) {
    if (m.kind != chat::HarmonyMessage::Kind::kToolCall) continue;
    std::optional<chat::ToolCall> call =
        format_.parse_tools ? harmony_call(m) : std::optional<chat::ToolCall>();
    if (call) {
      call->id = fmt::format("{}{}", call_id_prefix, r.tool_calls.size());
      r.tool_calls.push_back(std::move(*call));
      continue;
    }
    // Not a call after all (tools off, or a body that is no JSON object, cut by max_tokens): its
    // text is content rather than lost.
    if (m.body.empty()) continue;
    if (!content_.empty() || !unstreamed.empty()) unstreamed += chat::HarmonyParser::kJoin;
    unstreamed += m.body;
  }
  r.content = content_ + unstreamed;
  r.unstreamed_content = std::move(unstreamed);
  if (harmony_->saw_reasoning() || !reasoning_.empty()) r.reasoning = reasoning_;
  return r;
}

std::span<const chat::TextSpan> ReplyParser::content_spans() const {
  if (!harmony_) return {};
  return harmony_->content_spans();
}

std::size_t ReplyParser::settled() const { return harmony_ ? harmony_->settled() : 0; }

std::vector<chat::TextSpan> ReplyParser::reasoning_spans() const {
  std::vector<chat::TextSpan> out;
  if (!harmony_) return out;
  for (const chat::HarmonyMessage& m : harmony_->messages()) {
    if (m.kind == chat::HarmonyMessage::Kind::kReasoning) out.push_back(m.span);
  }
  return out;
}

}  // namespace recur::server
