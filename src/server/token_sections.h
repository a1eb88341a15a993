// Lines a turn's generated tokens up with the content the reasoning splitter returns, so that
// chat logprobs cover exactly the content (`logprobs.content` tokens concatenated are
// `message.content`, byte for byte) and the reasoning tokens can be counted for usage. Works on
// byte offsets in the generated text: each sampled token carries the text it made final
// (SampleResult::text), and the content is a suffix of the text (the splitter drops the
// reasoning block and the newlines after it, never anything later). Harmony replies (gpt-oss) are
// lined up by spans instead: each token's span in the marked text (MarkedText) against the
// content's spans there (HarmonyParser); a marker is never content.
// Thread-compatible: one per turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/harmony.h"
#include "engine/sampler.h"
#include "server/openai_response.h"

namespace recur::server {

class TokenSections {
 public:
  // One engine event: its sampled tokens, its text (what the splitter was pushed) and the
  // content the splitter has returned so far, in all. Returns the logprob entries of the content's
  // tokens seen so far. A token whose text straddles the content's start (the newlines after
  // </think>) keeps only its part inside the content; tokens before it have none.
  std::vector<LogprobEntry> push(std::span<const engine::SampleResult> samples,
                                 std::string_view text, std::size_t content_bytes);
  // Sampled tokens before the content: the reasoning block with its tags and the newlines after
  // it (all tokens when the turn has no content). Meaningful once the turn is done.
  std::int64_t tokens_before_content() const;

  // Harmony's way: this event's samples, every sample's span so far in the marked text (a span
  // may move from unplaced to placed later: MarkedText::spans), the marked text this event
  // released, the content's spans in it and how far the parser has classified it. Returns the
  // entries of the content tokens now classified: a token's bytes are its span's part inside the
  // content; a token without text is an entry where it lies strictly inside the content.
  std::vector<LogprobEntry> push_marked(std::span<const engine::SampleResult> samples,
                                        std::span<const chat::TextSpan> spans,
                                        std::string_view marked_text,
                                        std::span<const chat::TextSpan> content,
                                        std::size_t settled);
  // Tokens whose spans (MarkedText::spans) lie inside `within` (harmony's reasoning messages).
  static std::int64_t tokens_within(std::span<const chat::TextSpan> spans,
                                    std::span<const chat::TextSpan> within);

 private:
  struct Token {
    std::size_t begin = 0;  // the token's text, as byte offsets in text_
    std::size_t end = 0;
    std::string raw;  // the bytes behind the text where the decoder replaced some; else empty
    float logprob = 0;
    std::vector<engine::TokenLogprob> top;
  };
  std::vector<Token> tokens_;
  std::string text_;      // the generated text so far
  std::size_t next_ = 0;  // the first token not yet emitted or skipped
  std::size_t content_begin_ = 0;
  bool content_seen_ = false;
};

}  // namespace recur::server
