// Anthropic Messages responses for a chat turn: one `message` body, or the SSE event sequence
// (message_start, ping, content_block_start/delta/stop for thinking, text and tool_use blocks,
// message_delta with stop_reason and usage, message_stop; `error` on failure). Usage splits the
// prompt as Anthropic does: cache_read_input_tokens were restored from the prompt cache,
// cache_creation_input_tokens were computed and stored in it by this request, input_tokens were
// computed and not stored; their sum is the prompt.
#pragma once

#include <string>
#include <vector>

#include "server/chat_turn.h"

namespace recur::server {

struct AnthropicUsage {
  std::int64_t input_tokens = 0;
  std::int64_t cache_creation_input_tokens = 0;
  std::int64_t cache_read_input_tokens = 0;
  std::int64_t output_tokens = 0;
};
AnthropicUsage anthropic_usage(const engine::Usage& usage, bool prompt_stored);

// end_turn, max_tokens, stop_sequence or tool_use.
std::string anthropic_stop_reason(const TurnResult& r);

class AnthropicRenderer final : public TurnRenderer {
 public:
  // `prompt_tokens`: the prompt's length, for message_start's usage.
  AnthropicRenderer(std::string id, std::string model, const ChatRequest& request,
                    std::int64_t prompt_tokens);
  std::string heartbeat() const override;
  bool first_event(ChunkWriter& out, const engine::Event& ev) override;
  bool delta(ChunkWriter& out, const TurnDelta& d) override;
  bool finish(ChunkWriter& out, const TurnResult& r) override;
  void fail(ChunkWriter& out, const ApiError& err) override;

 private:
  enum class Block { kNone, kThinking, kText };
  // Closes the open block unless it is `kind`, then opens `kind` there.
  std::string switch_block(Block kind);
  std::string close_block();

  std::string id_;
  std::string model_;
  bool stream_;
  std::vector<std::string> stop_sequences_;
  std::int64_t prompt_tokens_;
  Block open_ = Block::kNone;
  int index_ = -1;  // the last block's index
};

}  // namespace recur::server
