// OpenAI request bodies parsed into typed structs, with a 400 naming the field for anything
// malformed. JSON stops here: what goes deeper is typed (tool schemas and kwargs stay JSON text
// because only the chat template reads them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "chat/formatter.h"
#include "chat/message.h"
#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/output_format.h"
#include "server/unsupported_tools.h"

namespace recur::server {

// Limits that protect the server from hostile requests; each error names the limit.
struct RequestLimits {
  std::size_t max_logit_bias = 1024;  // entries of logit_bias
  std::size_t max_messages = 4096;
  std::size_t max_stop_strings = 16;
  std::size_t max_stop_string_bytes = 1024;
  std::size_t max_tools_json_bytes = 1u << 20;
  std::int64_t max_tokens_cap = 1 << 20;
  int max_json_depth = 64;  // nesting of arrays/objects in the body (re-serializing recurses)
  // Hosted tools and others recur cannot run: left out of the prompt, or a 400
  // (--reject-unsupported-tools).
  UnsupportedTools unsupported_tools = UnsupportedTools::kLeaveOut;
};

// Fields shared by chat and text completions.
struct GenerationFields {
  std::string model;
  engine::SamplingParams sampling;  // seed unset means: derived from the request id
  bool seed_given = false;
  std::optional<std::int64_t> max_tokens;  // max_completion_tokens or max_tokens
  std::vector<std::string> stop;
  // vLLM's extension: generation runs to max_tokens through end-of-generation tokens (benchmarks
  // and tests that need an exact output length).
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int n = 1;
  // Cache identity (design section 1): tenant extension and session keys.
  std::string prompt_cache_key;
  std::string user;
  std::string cache_salt;
};

struct ChatRequest {
  GenerationFields gen;
  std::vector<chat::Message> messages;
  std::string tools_json;                 // "" or a JSON array of tool definitions
  std::string tool_choice_json;           // "" or the tool_choice value as JSON
  std::string chat_template_kwargs_json;  // "" or a JSON object
  bool parallel_tool_calls = true;
  // Labels of the declared tools left out of the prompt (unsupported_tools.h).
  std::vector<std::string> dropped_tools;
  // Client cache breakpoints (Anthropic cache_control), in message order: hybrid and recurrent
  // models keep a shared snapshot where each falls.
  std::vector<chat::CacheBreakpoint> cache_breakpoints;
  // The prompt ends with the generation prompt, or (add_generation_prompt false) without it, or
  // (continue_final_message: a prefill) right after the final assistant message's text.
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  // response_format / text.format / output_config.format / grammar: what the reply must be.
  OutputFormat output_format;

  // What the chat formatter renders (borrows this request's fields).
  chat::ChatInputs inputs() const {
    return {.messages = messages,
            .tools_json = tools_json,
            .kwargs_json = chat_template_kwargs_json,
            .add_generation_prompt = add_generation_prompt,
            .continue_final_message = continue_final_message};
  }
};

// A final assistant message with text and no tool calls: what a prefill looks like.
bool ends_with_prefill(const std::vector<chat::Message>& messages);

// The refusal of a content part or block recur cannot take: media are refused as such.
ApiError unsupported_part(const std::string& param, std::string_view type, const char* accepted);

struct CompletionRequest {
  GenerationFields gen;
  // A text prompt, or pre-tokenized ids (the API accepts either).
  std::variant<std::string, std::vector<std::int32_t>> prompt;
  bool echo = false;
  // response_format / grammar (extensions here, as llama.cpp's and vLLM's): the completion's shape.
  OutputFormat output_format;
};

Parsed<ChatRequest> parse_chat_request(std::string_view body, const RequestLimits& limits);
Parsed<CompletionRequest> parse_completion_request(std::string_view body,
                                                   const RequestLimits& limits);

}  // namespace recur::server
