#include "server/chat_turn.h"

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "server/marked_text.h"
#include "server/recur_fields.h"
#include "server/reply_parser.h"
#include "server/token_sections.h"
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

}  // namespace

ApiError finish_error(const engine::Event& e) {
  return e.finish == engine::FinishReason::kCancelled
             ? overloaded(e.error.message().empty() ? "cancelled" : e.error.message(), 1)
             : internal_error(e.error.message());
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

std::optional<engine::Event> pump_events(engine::RequestChannel& channel, ChunkWriter& out,
                                         std::string_view heartbeat, RequestTiming& timing,
                                         ServerMetrics* metrics,
                                         const std::function<bool(engine::Event&)>& on_event) {
  double ttft = 0;
  std::int64_t tokens = 0;
  auto last_token_at = std::chrono::steady_clock::now();
  for (;;) {
    auto ev = wait_event(channel, out, heartbeat);
    if (ev && ev->ttft_s > 0) ttft = ev->ttft_s;
    if (ev && (ev->ttft_s > 0 || ev->done)) timing.engine = ev->timing;
    if (ev && !ev->samples.empty()) {
      timing.mark_first_token();
      const auto now = std::chrono::steady_clock::now();
      if (tokens > 0 && metrics) {
        metrics->observe_inter_token(std::chrono::duration<double>(now - last_token_at).count() /
                                     static_cast<double>(ev->samples.size()));
      }
      tokens += static_cast<std::int64_t>(ev->samples.size());
      last_token_at = now;
    }
    if (!ev || !on_event(*ev)) {
      channel.cancel();
      if (metrics) metrics->add_cancelled("client_disconnect");
      return std::nullopt;
    }
    if (!ev->done) continue;
    if (metrics) {
      const engine::Usage& u = ev->usage;
      metrics->add_tokens(u.prompt_tokens, u.cached_tokens, u.completion_tokens);
      if (ttft > 0) metrics->observe_ttft(ttft);
      timing.observe(*metrics);
    }
    return ev;
  }
}

void ChatTurn::run(ChunkWriter& out) {
  const bool stream = request.gen.stream;
  const bool logprobs = request.gen.sampling.logprobs;
  const bool split = backend->formatter->has_reasoning();
  const bool harmony = backend->formatter->harmony();
  ReplyParser parser({.split_reasoning = split,
                      .starts_in_reasoning = prompt.starts_in_reasoning,
                      .parse_tools = tools_active(request),
                      .harmony = harmony,
                      .harmony_tail = std::string(chat::harmony_prompt_tail(prompt.text))});
  // Harmony's markers are special tokens the engine's text leaves out: spelled out for the parser.
  std::optional<MarkedText> marked;
  if (harmony) marked.emplace(*backend->tokenizer, chat::kHarmonyMarkers);
  // Which tokens are content (their logprobs) and which reasoning (counted in usage).
  TokenSections sections;
  std::vector<LogprobEntry> entries;
  bool first = true;

  if (stream && !renderer->start(out)) {
    channel->cancel();
    if (metrics) metrics->add_cancelled("client_disconnect");
    return;
  }
  auto ended =
      pump_events(*channel, out, renderer->heartbeat(), timing, metrics, [&](engine::Event& ev) {
        if (stream && first && !renderer->first_event(out, ev)) return false;
        first = false;
        const std::string text = marked ? marked->push(ev.samples, ev.text, ev.done) : ev.text;
        ReplyPart part = parser.push(text, ev.done);
        std::vector<LogprobEntry> now;
        if (marked && logprobs) {
          now = sections.push_marked(ev.samples, marked->spans(), text, parser.content_spans(),
                                     parser.settled());
        } else if (!marked && (logprobs || split)) {
          now = sections.push(ev.samples, ev.text, parser.content().size());
        }
        if (!logprobs) now.clear();
        if (!stream) {
          entries.insert(entries.end(), now.begin(), now.end());
          return true;
        }
        TurnDelta d{.reasoning = std::move(part.reasoning),
                    .content = std::move(part.stream_content),
                    .logprobs = std::move(now),
                    .reasoning_block = parser.has_reasoning_block()};
        return (d.content.empty() && d.reasoning.empty() && d.logprobs.empty()) ||
               renderer->delta(out, d);
      });
  if (!ended) return;
  engine::Event done = std::move(*ended);

  if (log_text) {
    log::debug("completion id={} finish={} reasoning={} content={}", id,
               engine::finish_reason_name(done.finish), quoted_for_log(parser.reasoning()),
               quoted_for_log(parser.content()));
  }
  if (done.finish == engine::FinishReason::kError ||
      done.finish == engine::FinishReason::kCancelled) {
    renderer->fail(out, finish_error(done));
    return;
  }
  ParsedReply reply = parser.finish(request.tools_json, call_id_prefix);
  TurnResult r{.content = std::move(reply.content),
               .reasoning = std::move(reply.reasoning),
               .tool_calls = std::move(reply.tool_calls),
               .logprobs = std::move(entries),
               .finish = done.finish,
               .stop_index = done.stop_index,
               .usage = done.usage,
               .trace = done.trace,
               .prompt_stored = done.completion_stored,
               .timing = &timing};
  if (r.reasoning) {
    r.reasoning_tokens =
        marked ? TokenSections::tokens_within(marked->spans(), parser.reasoning_spans())
               : sections.tokens_before_content();
  }
  if (stream) r.unstreamed_content = std::move(reply.unstreamed_content);
  // The reply as the client will send it back next turn: the next turn's prompt starts with it.
  // A continued (prefilled) message comes back whole: its text, then what was generated.
  std::span<const chat::Message> history = request.messages;
  r.reply.role = "assistant";
  r.reply.content = r.content;
  r.reply.reasoning_content = r.reasoning;
  r.reply.tool_calls = r.tool_calls;
  if (request.continue_final_message) {
    const chat::Message& prefill = history.back();
    history = history.first(history.size() - 1);
    r.reply.content = prefill.text() + r.content;
    if (!r.reasoning) r.reply.reasoning_content = prefill.reasoning_content;
  }
  if (!renderer->finish(out, r)) return;

  if (!backend->engine->accepts_warmups()) return;
  chat::ChatInputs in = request.inputs();
  in.messages = history;
  in.continue_final_message = false;
  in.add_generation_prompt = true;
  auto prefix = backend->formatter->next_turn_prefix(in, r.reply);
  if (!prefix.empty()) {
    backend->engine->continue_turn(done.turn_end, std::move(prefix));
  }
}

void TextTurn::run(ChunkWriter& out) {
  const bool stream = request.gen.stream;
  std::string text = request.echo ? prompt_text : "";
  std::vector<engine::SampleResult> samples;
  auto ended =
      pump_events(*channel, out, ": keep-alive\n\n", timing, metrics, [&](engine::Event& ev) {
        samples.insert(samples.end(), ev.samples.begin(), ev.samples.end());
        text += ev.text;
        return !stream || ev.text.empty() || out.write(text_chunk_sse(meta, ev.text, std::nullopt));
      });
  if (!ended) return;
  engine::Event done = std::move(*ended);
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
    std::string body = text_chunk_sse(meta, "", finish, {.timing = &timing});
    if (request.gen.include_usage) body += text_usage_chunk_sse(meta, done.usage);
    body += cache_trace_comment(done.trace) + sse_done();
    out.write(body);
    return;
  }
  TextResult r{.text = text,
               .samples = samples,
               .logprobs = request.gen.sampling.logprobs,
               .finish_reason = finish,
               .usage = done.usage,
               .recur = {.trace = &done.trace, .timing = &timing}};
  out.write(text_completion_json(meta, r, *backend->tokenizer));
}

}  // namespace recur::server
