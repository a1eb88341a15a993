// Messages + tools + chat_template_kwargs to prompt tokens through the model's chat template,
// plus what the prompt cache needs from the template: the history boundary, the anticipated
// prefix of the next turn (design section 5) and the template signature.
// Thread-safe for concurrent const use (HTTP threads render in parallel).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/message.h"
#include "chat/normalize.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace recur::chat {

using TokenId = tokenizer::TokenId;

struct ChatInputs {
  std::span<const Message> messages;
  std::string_view tools_json;   // "" or a JSON array of tool definitions
  std::string_view kwargs_json;  // "" or a JSON object: chat_template_kwargs
  // Client cache breakpoints (Anthropic cache_control), in message order.
  std::span<const CacheBreakpoint> cache_breakpoints;
  // How build_prompt ends the prompt: with the generation prompt (a new assistant turn), or
  // without it; or, continuing the final assistant message (a prefill), right after its text.
  bool add_generation_prompt = true;
  bool continue_final_message = false;
};

struct Prompt {
  std::string text;
  std::vector<TokenId> tokens;
  // tokens [0, history_boundary) are also the tokens of the rendering without the generation
  // prompt: the state there is what the next turn can reuse whatever this turn generates.
  std::int64_t history_boundary = 0;
  // The generation prompt leaves the model inside a <think> block: its output starts as reasoning.
  bool starts_in_reasoning = false;
  // Tokens [0, shared_boundary) render the leading system/developer messages (and the tools the
  // template puts with them): what a tenant's conversations commonly share. 0: none.
  std::int64_t shared_boundary = 0;
  // The token positions of the cache breakpoints (ascending, each within the history): where
  // each breakpoint's message ends, as far as any continuation would render it the same.
  std::vector<std::int64_t> cache_points;
  // What building it cost, in seconds (the request's timing).
  double render_s = 0;
  double tokenize_s = 0;
};

class ChatFormatter {
 public:
  // Uses the tokenizer's chat template (tokenizer_config.json or chat_template.jinja).
  static Result<ChatFormatter> create(const tokenizer::Tokenizer& tok);
  static Result<ChatFormatter> create(const tokenizer::Tokenizer& tok, std::string template_source);

  // The rendered text of the normalised messages (normalize.h); errors from the template
  // (raise_exception, limits) carry line and column.
  Result<std::string> render(const ChatInputs& in, bool add_generation_prompt) const;
  // The messages rendered as given, without normalisation, as Hugging Face's
  // apply_chat_template renders them (tests compare the two).
  Result<std::string> render_as_given(const ChatInputs& in, bool add_generation_prompt) const {
    return render_normalized(in.messages, in, add_generation_prompt);
  }
  // The prompt for a request: rendered as `in` says, tokenized, with its boundaries. Continuing
  // the final message fails (kInvalidArgument) when it is not an assistant message with text, or
  // when the template does not print that text.
  Result<Prompt> build_prompt(const ChatInputs& in) const;
  // The tokens the next turn's prompt will start with, given this turn's messages and the
  // assistant's reply: the part two renderings with different placeholder turns agree on.
  // Empty when the template cannot render such a continuation.
  std::vector<TokenId> next_turn_prefix(const ChatInputs& in, const Message& reply) const;
  // Hash of the template source, kwargs and tools: entries of different signatures never meet.
  std::uint64_t signature(const ChatInputs& in) const;
  // Whether the template knows reasoning blocks (<think>): generated text is split then.
  bool has_reasoning() const { return has_reasoning_; }
  // Whether the template writes harmony (gpt-oss) and the vocabulary has its markers: generated
  // turns are read as harmony messages (chat/harmony.h).
  bool harmony() const { return harmony_; }
  const std::string& template_source() const { return source_; }
  // What the template can express, detected when the formatter was created.
  const TemplateCaps& caps() const { return caps_; }

 private:
  ChatFormatter(const tokenizer::Tokenizer& tok, std::string source, tmpl::Template parsed);
  // Where a breakpoint falls in the prompt's tokens: the messages before it followed by its
  // message cut there and continued by two texts that share nothing render alike up to that
  // point. 0 when the template cannot render the cut.
  std::int64_t breakpoint_position(const ChatInputs& in, const CacheBreakpoint& at,
                                   std::span<const TokenId> prompt) const;
  // The messages `with(placeholder)` builds, normalised, rendered and tokenized for two
  // placeholders that share no first character or character class: where the two part is where
  // the placeholder begins. nullopt when the template cannot render them.
  std::optional<std::pair<std::vector<TokenId>, std::vector<TokenId>>> render_two_ways(
      const ChatInputs& in, bool add_generation_prompt,
      const std::function<std::vector<Message>(const char*)>& with) const;
  Result<std::string> render_normalized(std::span<const Message> messages, const ChatInputs& in,
                                        bool add_generation_prompt) const;
  Result<std::string> continuation(std::span<const Message> messages, const ChatInputs& in) const;
  const tokenizer::Tokenizer* tok_;
  std::string source_;
  tmpl::Template template_;
  bool has_reasoning_ = false;
  bool harmony_ = false;
  TemplateCaps caps_;
};

// Longest common prefix length of two token vectors.
std::int64_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b);

}  // namespace recur::chat
