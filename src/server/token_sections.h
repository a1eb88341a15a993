// Lines a turn's generated tokens up with the content the reasoning splitter returns, so that
// chat logprobs cover exactly the content (`logprobs.content` tokens concatenated are
// `message.content`, byte for byte) and the reasoning tokens can be counted for usage. Works on
// byte offsets: the engine's text is a prefix of the tokens' bytes (the rest held back for a stop
// string or an incomplete character), and the content is a suffix of the engine's text (the
// splitter drops the reasoning block and the newlines after it, never anything later).
// Thread-compatible: one per turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"

namespace recur::server {

class TokenSections {
 public:
  explicit TokenSections(const tokenizer::Tokenizer& tok) : tok_(&tok) {}

  // One engine event: its sampled tokens, its text (what the splitter was pushed) and the
  // content the splitter has returned so far, in all. Returns the logprob entries of content
  // tokens that are complete now (all that remain when `done`). A token that straddles the
  // content's start (the newlines after </think>) or end (a stop string) keeps only its bytes
  // inside the content; tokens wholly outside it have no entry.
  std::vector<LogprobEntry> push(std::span<const engine::SampleResult> samples,
                                 std::string_view text, std::size_t content_bytes, bool done);
  // Sampled tokens wholly before the content: the reasoning block with its tags (all tokens when
  // the turn has no content). Meaningful once done, for a turn with a reasoning block.
  std::int64_t tokens_before_content() const;

 private:
  struct Token {
    std::size_t begin = 0;  // byte offsets in the tokens' concatenated bytes
    std::size_t end = 0;
    engine::SampleResult sample;
  };
  const tokenizer::Tokenizer* tok_;
  std::vector<Token> tokens_;
  std::string token_bytes_;  // every token's bytes, concatenated
  std::string text_;         // the engine's text so far
  std::size_t next_ = 0;     // the first token not yet emitted or skipped
  std::size_t content_begin_ = 0;
  bool content_seen_ = false;
  // The tokens' bytes did not line up with the text (a decoder that strips or rewrites): the
  // entries are then the whole tokens, as they come.
  bool misaligned_ = false;
};

}  // namespace recur::server
