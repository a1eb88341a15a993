#include "server/chat_turn.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "chat/reasoning.h"
#include "server/tool_calls.h"
#include "util/log.h"

namespace recur::server {

namespace {

constexpr auto kHeartbeatEvery = std::chrono::milliseconds(250);

void write_failure(ChunkWriter& out, const engine::Event& done) {
  ApiError err = finish_error(done);
  out.fail(err, sse_error(err.to_json()) + sse_done());
}

bool tools_active(const ChatRequest& r) {
  return !r.tools_json.empty() && r.tool_choice_json != "\"none\"";
}

void observe(ServerMetrics* m, const engine::Event& done, double ttft) {
  if (m == nullptr) return;
  m->add_tokens(done.usage.prompt_tokens, done.usage.cached_tokens, done.usage.completion_tokens);
  if (ttft > 0) m->observe_ttft(ttft);
}

}  // namespace

ApiError finish_error(const engine::Event& e) {
  return e.finish == engine::FinishReason::kCancelled
             ? overloaded(e.error.message().empty() ? "cancelled" : e.error.message(), 1)
             : internal_error(e.error.message());
}

void add_trace(std::string& json_body, const engine::CacheTrace& trace) {
  // A debug field beside the API's own (clients ignore unknown fields): the cache trace.
  if (json_body.empty() || json_body.back() != '}') return;
  json_body.pop_back();
  json_body += ",\"x_recur_cache\":\"" + trace.to_header() + "\"}";
}

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
  const bool split = backend->formatter->has_reasoning();
  const std::string heartbeat = renderer->heartbeat();
  chat::ReasoningSplitter splitter(prompt.starts_in_reasoning);
  ToolCallStreamFilter filter;
  std::string reasoning, content;  // content before tool-call parsing
  std::vector<engine::SampleResult> samples;
  engine::Event done;
  double ttft = 0;
  bool first = true;
  auto last_token_at = std::chrono::steady_clock::now();
  auto gone = [&] {
    channel->cancel();
    if (metrics) metrics->add_cancelled("client_disconnect");
  };

  if (stream && !renderer->start(out)) return gone();
  for (;;) {
    auto ev = wait_event(*channel, out, heartbeat);
    if (!ev) {
      if (metrics) metrics->add_cancelled("client_disconnect");
      return;
    }
    if (stream && first && !renderer->first_event(out, *ev)) return gone();
    first = false;
    if (ev->ttft_s > 0) ttft = ev->ttft_s;
    if (ev->ttft_s > 0 || ev->done) timing.engine = ev->timing;
    if (!ev->samples.empty()) timing.mark_first_token();
    if (!ev->samples.empty() && metrics) {
      auto now = std::chrono::steady_clock::now();
      if (!samples.empty() || !content.empty()) {
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
    reasoning += part.reasoning;
    content += part.content;
    if (logprobs) samples.insert(samples.end(), ev->samples.begin(), ev->samples.end());
    if (stream) {
      TurnDelta d{.reasoning = part.reasoning,
                  .reasoning_block = split && splitter.saw_reasoning()};
      d.content = parse_tools ? filter.push(part.content) : part.content;
      if (logprobs) d.samples = ev->samples;
      if ((!d.content.empty() || !d.reasoning.empty() || !d.samples.empty()) &&
          !renderer->delta(out, d)) {
        return gone();
      }
    }
    if (!ev->done) continue;
    done = std::move(*ev);
    break;
  }

  observe(metrics, done, ttft);
  if (metrics) timing.observe(*metrics);
  if (log_text) {
    log::debug("completion id={} finish={} reasoning={} content={}", id,
               engine::finish_reason_name(done.finish), quoted_for_log(reasoning),
               quoted_for_log(content));
  }
  if (done.finish == engine::FinishReason::kError ||
      done.finish == engine::FinishReason::kCancelled) {
    renderer->fail(out, finish_error(done));
    return;
  }
  ParsedToolCalls calls = parse_tools ? parse_tool_calls(content, request.tools_json, id + "-call-")
                                      : ParsedToolCalls{content, {}};
  TurnResult r{.content = calls.content,
               .tool_calls = calls.calls,
               .samples = std::move(samples),
               .finish = done.finish,
               .stop_index = done.stop_index,
               .usage = done.usage,
               .trace = done.trace,
               .prompt_stored = !done.completion_snapshot_tokens.empty(),
               .timing = &timing};
  if (split && (splitter.saw_reasoning() || !reasoning.empty())) r.reasoning = reasoning;
  if (stream && parse_tools && calls.calls.empty()) r.unstreamed_content = filter.held();
  // The reply as the client will send it back next turn: the next turn's prompt starts with it.
  r.reply.role = "assistant";
  r.reply.content = r.content;
  r.reply.reasoning_content = r.reasoning;
  r.reply.tool_calls = r.tool_calls;
  if (!renderer->finish(out, r)) return;

  if (!backend->engine->accepts_warmups()) return;
  chat::ChatInputs in{.messages = request.messages,
                      .tools_json = request.tools_json,
                      .kwargs_json = request.chat_template_kwargs_json};
  auto prefix = backend->formatter->next_turn_prefix(in, r.reply);
  if (!prefix.empty()) {
    backend->engine->submit_warmup(key, std::move(prefix),
                                   std::move(done.completion_snapshot_tokens));
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
    if (ev->ttft_s > 0 || ev->done) timing.engine = ev->timing;
    if (!ev->samples.empty()) timing.mark_first_token();
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
  if (metrics) timing.observe(*metrics);
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
    add_timing_to_sse(body, timing);
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
  add_timing(body, timing);
  out.write(body);
}

}  // namespace recur::server
