#include "server/reply_parser.h"

namespace recur::server {

ReplyParser::ReplyParser(ReplyFormat format)
    : format_(format), splitter_(format.starts_in_reasoning) {}

ReplyPart ReplyParser::push(std::string_view text, bool last) {
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

}  // namespace recur::server
