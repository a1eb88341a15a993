#include "server/chat_turn.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "chat/reasoning.h"
#include "server/tool_calls.h"
#include "util/log.h"

namespace recur::server {

namespace {

constexpr auto kHeartbeatEvery = std::chrono::milliseconds(250);

// Collected output of a finished turn, for the non-streaming body and the warm-up.
struct Collected {
  std::string reasoning;
  std::string content;  // before tool-call parsing
  std::vector<engine::SampleResult> samples;
  engine::Event last;
};

ApiError finish_error(const engine::Event& e) {
  return e.finish == engine::FinishReason::kCancelled
             ? overloaded(e.error.message().empty() ? "cancelled" : e.error.message(), 1)
             : internal_error(e.error.message());
}

void write_failure(ChunkWriter& out, const engine::Event& done) {
  ApiError err = finish_error(done);
  out.fail(err, sse_error(err.to_json()) + sse_done());
}

bool tools_active(const ChatRequest& r) {
  return !r.tools_json.empty() && r.tool_choice_json != "\"none\"";
}

void add_trace(std::string& json_body, const engine::CacheTrace& trace) {
  // A debug field beside the OpenAI ones (clients ignore unknown fields): the cache trace.
  if (json_body.empty() || json_body.back() != '}') return;
  json_body.pop_back();
  json_body += ",\"x_recur_cache\":\"" + trace.to_header() + "\"}";
}

void observe(ServerMetrics* m, const engine::Event& done, double ttft) {
  if (m == nullptr) return;
  m->add_tokens(done.usage.prompt_tokens, done.usage.cached_tokens, done.usage.completion_tokens);
  if (ttft > 0) m->observe_ttft(ttft);
}

}  // namespace

std::string quoted_for_log(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<engine::Event> wait_event(engine::RequestChannel& channel, ChunkWriter& out,
                                        std::string_view heartbeat) {
  for (;;) {
    if (auto e = channel.pop(kHeartbeatEvery)) return e;
    if (!out.keep_alive(heartbeat)) {
      channel.cancel();
      return std::nullopt;
    }
  }
}

void ChatTurn::run(ChunkWriter& out) {
  const bool stream = request.gen.stream;
  const bool logprobs = request.gen.sampling.logprobs;
  const bool parse_tools = tools_active(request);
  chat::ReasoningSplitter splitter(prompt.starts_in_reasoning);
  const bool split = backend->formatter->has_reasoning();
  ToolCallStreamFilter filter;
  Collected got;
  double ttft = 0;
  auto last_token_at = std::chrono::steady_clock::now();

  if (stream && !out.write(chat_chunk_sse(meta, {.role = true}, *backend->tokenizer))) {
    channel->cancel();
    return;
  }
  for (;;) {
    auto ev = wait_event(*channel, out, ": keep-alive\n\n");
    if (!ev) {
      if (metrics) metrics->add_cancelled("client_disconnect");
      return;
    }
    if (ev->ttft_s > 0) ttft = ev->ttft_s;
    if (!ev->samples.empty() && metrics) {
      auto now = std::chrono::steady_clock::now();
      if (got.samples.size() > 0 || !got.content.empty()) {
        metrics->observe_inter_token(std::chrono::duration<double>(now - last_token_at).count() /
                                     static_cast<double>(ev->samples.size()));
      }
      last_token_at = now;
    }
    chat::SplitText part = split ? splitter.push(ev->text) : chat::SplitText{{}, ev->text};
    if (ev->done) {
      chat::SplitText tail = split ? splitter.finish() : chat::SplitText{};
      part.reasoning += tail.reasoning;
      part.content += tail.content;
    }
    got.reasoning += part.reasoning;
    got.content += part.content;
    if (logprobs) got.samples.insert(got.samples.end(), ev->samples.begin(), ev->samples.end());
    if (stream) {
      ChatDelta d{.reasoning_content = part.reasoning, .logprobs = logprobs};
      d.content = parse_tools ? filter.push(part.content) : part.content;
      if (logprobs) d.samples = ev->samples;
      if ((!d.content.empty() || !d.reasoning_content.empty() || !d.samples.empty()) &&
          !out.write(chat_chunk_sse(meta, d, *backend->tokenizer))) {
        channel->cancel();
        if (metrics) metrics->add_cancelled("client_disconnect");
        return;
      }
    }
    if (!ev->done) continue;
    got.last = std::move(*ev);
    break;
  }

  engine::Event& done = got.last;
  observe(metrics, done, ttft);
  if (log_text) {
    log::debug("completion id={} finish={} reasoning={} content={}", meta.id,
               engine::finish_reason_name(done.finish), quoted_for_log(got.reasoning),
               quoted_for_log(got.content));
  }
  if (done.finish == engine::FinishReason::kError ||
      done.finish == engine::FinishReason::kCancelled) {
    write_failure(out, done);
    return;
  }
  ParsedToolCalls calls =
      parse_tools ? parse_tool_calls(got.content, request.tools_json, meta.id + "-call-")
                  : ParsedToolCalls{got.content, {}};
  const std::string finish = finish_reason_text(done.finish, !calls.calls.empty());
  const bool has_reasoning = split && (splitter.saw_reasoning() || !got.reasoning.empty());
  if (stream) {
    ChatDelta tail{.finish_reason = finish};
    if (!calls.calls.empty()) {
      tail.tool_calls = calls.calls;
    } else if (parse_tools) {
      tail.content = filter.held();  // not a tool call after all: it is content
    }
    std::string body = chat_chunk_sse(meta, tail, *backend->tokenizer);
    if (request.gen.include_usage) body += chat_usage_chunk_sse(meta, done.usage);
    // The cache trace as an SSE comment: ignored by clients, visible to people and tests.
    body += ": x-recur-cache " + done.trace.to_header() + "\n\n";
    body += sse_done();
    if (!out.write(body)) return;
  } else {
    ChatResult r{.content = calls.content,
                 .tool_calls = calls.calls,
                 .samples = got.samples,
                 .logprobs = logprobs,
                 .finish_reason = finish,
                 .usage = done.usage};
    if (has_reasoning) r.reasoning_content = got.reasoning;
    std::string body = chat_completion_json(meta, r, *backend->tokenizer);
    add_trace(body, done.trace);
    if (!out.write(body)) return;
  }

  if (!backend->engine->accepts_warmups()) return;
  // The reply as the client will send it back next turn: the next turn's prompt starts with it.
  chat::Message reply;
  reply.role = "assistant";
  reply.content = calls.content;
  if (has_reasoning) reply.reasoning_content = got.reasoning;
  reply.tool_calls = calls.calls;
  chat::ChatInputs in{.messages = request.messages,
                      .tools_json = request.tools_json,
                      .kwargs_json = request.chat_template_kwargs_json};
  auto prefix = backend->formatter->next_turn_prefix(in, reply);
  if (!prefix.empty()) {
    backend->engine->submit_warmup(key, std::move(prefix),
                                   std::move(got.last.completion_snapshot_tokens));
  }
}

void TextTurn::run(ChunkWriter& out) {
  const bool stream = request.gen.stream;
  std::string text = request.echo ? prompt_text : "";
  std::vector<engine::SampleResult> samples;
  double ttft = 0;
  engine::Event done;
  for (;;) {
    auto ev = wait_event(*channel, out, ": keep-alive\n\n");
    if (!ev) {
      if (metrics) metrics->add_cancelled("client_disconnect");
      return;
    }
    if (ev->ttft_s > 0) ttft = ev->ttft_s;
    samples.insert(samples.end(), ev->samples.begin(), ev->samples.end());
    text += ev->text;
    if (stream && !ev->text.empty() && !out.write(text_chunk_sse(meta, ev->text, std::nullopt))) {
      channel->cancel();
      if (metrics) metrics->add_cancelled("client_disconnect");
      return;
    }
    if (ev->done) {
      done = std::move(*ev);
      break;
    }
  }
  observe(metrics, done, ttft);
  if (log_text) {
    log::debug("completion id={} finish={} text={}", meta.id,
               engine::finish_reason_name(done.finish), quoted_for_log(text));
  }
  if (done.finish == engine::FinishReason::kError ||
      done.finish == engine::FinishReason::kCancelled) {
    write_failure(out, done);
    return;
  }
  const std::string finish = finish_reason_text(done.finish, false);
  if (stream) {
    std::string body = text_chunk_sse(meta, "", finish);
    if (request.gen.include_usage) body += text_usage_chunk_sse(meta, done.usage);
    body += ": x-recur-cache " + done.trace.to_header() + "\n\n" + sse_done();
    out.write(body);
    return;
  }
  TextResult r{.text = text,
               .samples = samples,
               .logprobs = request.gen.sampling.logprobs,
               .finish_reason = finish,
               .usage = done.usage};
  std::string body = text_completion_json(meta, r, *backend->tokenizer);
  add_trace(body, done.trace);
  out.write(body);
}

}  // namespace recur::server
