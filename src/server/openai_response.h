// OpenAI response bodies: chat.completion, chat.completion.chunk (SSE), text_completion, usage
// and logprobs, rendered from the engine's plain results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/message.h"
#include "engine/request.h"
#include "server/recur_fields.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {

struct ResponseMeta {
  std::string id;            // chatcmpl-... / cmpl-...
  std::string model;         // the served model name
  std::int64_t created = 0;  // unix seconds
};

// One generated token of chat logprobs: its text (only that inside the content where the token
// straddles the content's start or end: see TokenSections), the bytes behind it, its logprob and
// alternatives.
struct LogprobEntry {
  std::string text;   // `token`: the entries' texts concatenate to the content
  std::string bytes;  // `bytes`: text, or where the decoder replaced invalid UTF-8 in text with
                      // U+FFFD, the raw bytes it replaced (a stray byte token is its byte)
  float logprob = 0;
  std::vector<engine::TokenLogprob> top;
};

// "stop", "length" or "tool_calls".
std::string finish_reason_text(engine::FinishReason reason, bool has_tool_calls);

// Logprob entries as chat logprobs.content items.
std::string chat_logprobs_json(const std::vector<LogprobEntry>& entries,
                               const tokenizer::Tokenizer& tok);

// Chat usage carries completion_tokens_details.reasoning_tokens; text completions have none.
std::string usage_json(const engine::Usage& usage,
                       std::optional<std::int64_t> reasoning_tokens = std::nullopt);

struct ChatResult {
  std::string content;
  std::optional<std::string> reasoning_content;
  std::vector<chat::ToolCall> tool_calls;
  std::vector<LogprobEntry> logprob_entries;  // when logprobs were asked
  bool logprobs = false;
  std::string finish_reason;
  engine::Usage usage;
  std::int64_t reasoning_tokens = 0;
  RecurFields recur;
};
std::string chat_completion_json(const ResponseMeta& meta, const ChatResult& result,
                                 const tokenizer::Tokenizer& tok);

// One SSE chunk: "data: {...}\n\n". Fields left empty are omitted from the delta.
struct ChatDelta {
  bool role = false;  // first chunk: "role": "assistant"
  std::string content;
  std::string reasoning_content;
  std::vector<chat::ToolCall> tool_calls;
  std::vector<LogprobEntry> logprob_entries;
  bool logprobs = false;
  std::optional<std::string> finish_reason;
  RecurFields recur;  // the last chunk's
};
std::string chat_chunk_sse(const ResponseMeta& meta, const ChatDelta& delta,
                           const tokenizer::Tokenizer& tok);
// The final usage chunk of stream_options.include_usage: empty choices, usage set.
std::string chat_usage_chunk_sse(const ResponseMeta& meta, const engine::Usage& usage,
                                 std::int64_t reasoning_tokens);
// The same for /v1/completions streams (object "text_completion").
std::string text_usage_chunk_sse(const ResponseMeta& meta, const engine::Usage& usage);
std::string sse_done();
std::string sse_error(const std::string& error_json);

struct TextResult {
  std::string text;
  std::vector<engine::SampleResult> samples;
  bool logprobs = false;
  std::string finish_reason;
  engine::Usage usage;
  RecurFields recur;
};
std::string text_completion_json(const ResponseMeta& meta, const TextResult& result,
                                 const tokenizer::Tokenizer& tok);
std::string text_chunk_sse(const ResponseMeta& meta, const std::string& text,
                           const std::optional<std::string>& finish_reason,
                           const RecurFields& recur = {});

}  // namespace recur::server
