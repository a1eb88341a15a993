// chat/completions' wire format for a chat turn: chat.completion.chunk SSE (role first, deltas,
// the finish chunk with tool calls, the optional usage chunk, the cache trace comment, [DONE]) or
// one chat.completion body.
#pragma once

#include "server/chat_turn.h"

namespace recur::server {

class OpenAIChatRenderer final : public TurnRenderer {
 public:
  OpenAIChatRenderer(ResponseMeta meta, const ChatRequest& request,
                     const tokenizer::Tokenizer& tok);
  bool start(ChunkWriter& out) override;
  bool delta(ChunkWriter& out, const TurnDelta& d) override;
  bool finish(ChunkWriter& out, const TurnResult& r) override;
  void fail(ChunkWriter& out, const ApiError& err) override;

 private:
  ResponseMeta meta_;
  bool stream_;
  bool include_usage_;
  bool logprobs_;
  const tokenizer::Tokenizer* tok_;
};

}  // namespace recur::server
