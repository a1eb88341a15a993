#include "server/openai_chat_renderer.h"

#include "server/recur_fields.h"

namespace recur::server {

OpenAIChatRenderer::OpenAIChatRenderer(ResponseMeta meta, const ChatRequest& request,
                                       const tokenizer::Tokenizer& tok)
    : meta_(std::move(meta)),
      stream_(request.gen.stream),
      include_usage_(request.gen.include_usage),
      logprobs_(request.gen.sampling.logprobs),
      tok_(&tok) {}

bool OpenAIChatRenderer::start(ChunkWriter& out) {
  return out.write(chat_chunk_sse(meta_, {.role = true}, *tok_));
}

bool OpenAIChatRenderer::delta(ChunkWriter& out, const TurnDelta& d) {
  ChatDelta chunk{.content = d.content,
                  .reasoning_content = d.reasoning,
                  .logprob_entries = d.logprobs,
                  .logprobs = logprobs_};
  return out.write(chat_chunk_sse(meta_, chunk, *tok_));
}

bool OpenAIChatRenderer::finish(ChunkWriter& out, const TurnResult& r) {
  const std::string finish = finish_reason_text(r.finish, !r.tool_calls.empty());
  if (stream_) {
    ChatDelta tail{.finish_reason = finish, .recur = {.timing = r.timing}};
    if (!r.tool_calls.empty()) {
      tail.tool_calls = r.tool_calls;
    } else {
      tail.content = r.unstreamed_content;  // not a tool call after all: it is content
    }
    std::string body = chat_chunk_sse(meta_, tail, *tok_);
    if (include_usage_) body += chat_usage_chunk_sse(meta_, r.usage, r.reasoning_tokens);
    body += cache_trace_comment(r.trace);
    body += sse_done();
    return out.write(body);
  }
  ChatResult result{.content = r.content,
                    .reasoning_content = r.reasoning,
                    .tool_calls = r.tool_calls,
                    .logprob_entries = r.logprobs,
                    .logprobs = logprobs_,
                    .finish_reason = finish,
                    .usage = r.usage,
                    .reasoning_tokens = r.reasoning_tokens,
                    .recur = {.trace = &r.trace, .timing = r.timing}};
  return out.write(chat_completion_json(meta_, result, *tok_));
}

void OpenAIChatRenderer::fail(ChunkWriter& out, const ApiError& err) {
  out.fail(err, sse_error(err.to_json()) + sse_done());
}

}  // namespace recur::server
