#include "server/anthropic_response.h"

#include <nlohmann/json.hpp>

#include "server/json_fields.h"
#include "server/recur_fields.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

std::string event(const char* name, const json& data) {
  return fmt::format("event: {}\ndata: {}\n\n", name, dump_json(data));
}

json usage_json(const AnthropicUsage& u) {
  return json{{"input_tokens", u.input_tokens},
              {"cache_creation_input_tokens", u.cache_creation_input_tokens},
              {"cache_read_input_tokens", u.cache_read_input_tokens},
              {"output_tokens", u.output_tokens}};
}

// The arguments as the object Anthropic's tool_use.input is; text that is not a JSON object (a
// model's malformed call) goes through as a string field rather than being lost.
json tool_input(const std::string& arguments_json) {
  json j = json::parse(arguments_json, nullptr, false);
  if (j.is_object()) return j;
  return json{{"arguments", arguments_json}};
}

json tool_use_block(const chat::ToolCall& c) {
  return json{{"type", "tool_use"},
              {"id", c.id},
              {"name", c.name},
              {"input", tool_input(c.arguments_json)}};
}

json message_envelope(const std::string& id, const std::string& model) {
  return json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model},
              {"content", json::array()}};
}

}  // namespace

AnthropicUsage anthropic_usage(const engine::Usage& u, bool prompt_stored) {
  AnthropicUsage a;
  a.cache_read_input_tokens = u.cached_tokens;
  const std::int64_t computed = u.prompt_tokens - u.cached_tokens;
  a.cache_creation_input_tokens = prompt_stored ? computed : 0;
  a.input_tokens = computed - a.cache_creation_input_tokens;
  a.output_tokens = u.completion_tokens;
  return a;
}

std::string anthropic_stop_reason(const TurnResult& r) {
  if (!r.tool_calls.empty()) return "tool_use";
  if (r.finish == engine::FinishReason::kLength) return "max_tokens";
  if (r.stop_index) return "stop_sequence";
  return "end_turn";
}

AnthropicRenderer::AnthropicRenderer(std::string id, std::string model, const ChatRequest& request,
                                     std::int64_t prompt_tokens)
    : id_(std::move(id)),
      model_(std::move(model)),
      stream_(request.gen.stream),
      stop_sequences_(request.gen.stop),
      prompt_tokens_(prompt_tokens) {}

std::string AnthropicRenderer::heartbeat() const { return event("ping", json{{"type", "ping"}}); }

bool AnthropicRenderer::first_event(ChunkWriter& out, const engine::Event& ev) {
  // Sent once the engine has admitted the request, so the usage can say what the cache restored.
  const std::int64_t cached = ev.trace.hit ? ev.trace.hit_tokens : 0;
  json msg = message_envelope(id_, model_);
  msg["stop_reason"] = nullptr;
  msg["stop_sequence"] = nullptr;
  msg["usage"] =
      usage_json({.input_tokens = prompt_tokens_ - cached, .cache_read_input_tokens = cached});
  return out.write(event("message_start", json{{"type", "message_start"}, {"message", msg}}) +
                   heartbeat());
}

std::string AnthropicRenderer::close_block() {
  if (open_ == Block::kNone) return "";
  std::string out;
  if (open_ == Block::kThinking) {
    // Anthropic ends every thinking block with its signature; clients that keep reasoning in the
    // history (the Vercel AI SDK) read it from this delta only and drop a block without one, so
    // the next turn would render without this reply. recur signs nothing: an empty signature.
    out = event("content_block_delta",
                json{{"type", "content_block_delta"},
                     {"index", index_},
                     {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
  }
  open_ = Block::kNone;
  return out + event("content_block_stop", json{{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicRenderer::switch_block(Block kind) {
  if (open_ == kind) return "";
  std::string out = close_block();
  open_ = kind;
  ++index_;
  json block = kind == Block::kThinking
                   ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                   : json{{"type", "text"}, {"text", ""}};
  return out + event("content_block_start", json{{"type", "content_block_start"},
                                                 {"index", index_},
                                                 {"content_block", std::move(block)}});
}

bool AnthropicRenderer::delta(ChunkWriter& out, const TurnDelta& d) {
  std::string body;
  // A reasoning block comes first, also an empty one, as in the non-streaming body.
  if (d.reasoning_block && index_ < 0) body += switch_block(Block::kThinking);
  auto add = [&](Block kind, const std::string& text) {
    if (text.empty()) return;
    body += switch_block(kind);
    json delta = kind == Block::kThinking ? json{{"type", "thinking_delta"}, {"thinking", text}}
                                          : json{{"type", "text_delta"}, {"text", text}};
    body += event(
        "content_block_delta",
        json{{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
  };
  add(Block::kThinking, d.reasoning);
  add(Block::kText, d.content);
  return body.empty() || out.write(body);
}

bool AnthropicRenderer::finish(ChunkWriter& out, const TurnResult& r) {
  const AnthropicUsage usage = anthropic_usage(r.usage, r.prompt_stored);
  const std::string stop_reason = anthropic_stop_reason(r);
  const json stop_sequence = r.stop_index && *r.stop_index < stop_sequences_.size()
                                 ? json(stop_sequences_[*r.stop_index])
                                 : json(nullptr);
  if (!stream_) {
    json msg = message_envelope(id_, model_);
    if (r.reasoning) {
      msg["content"].push_back(
          json{{"type", "thinking"}, {"thinking", *r.reasoning}, {"signature", ""}});
    }
    if (!r.content.empty() || (r.tool_calls.empty() && !r.reasoning)) {
      msg["content"].push_back(json{{"type", "text"}, {"text", r.content}});
    }
    for (const auto& c : r.tool_calls) msg["content"].push_back(tool_use_block(c));
    msg["stop_reason"] = stop_reason;
    msg["stop_sequence"] = stop_sequence;
    msg["usage"] = usage_json(usage);
    add_recur_fields(msg, {.trace = &r.trace, .timing = r.timing});
    return out.write(dump_json(msg));
  }
  std::string body;
  if (r.reasoning && index_ < 0) body += switch_block(Block::kThinking);
  // A possible tool call held back that was text after all; an empty turn still has a text block.
  if (!r.unstreamed_content.empty() || (index_ < 0 && r.tool_calls.empty())) {
    body += switch_block(Block::kText);
    if (!r.unstreamed_content.empty()) {
      body += event("content_block_delta",
                    json{{"type", "content_block_delta"},
                         {"index", index_},
                         {"delta", {{"type", "text_delta"}, {"text", r.unstreamed_content}}}});
    }
  }
  body += close_block();
  for (const auto& c : r.tool_calls) {
    ++index_;
    json start = tool_use_block(c);
    start["input"] = json::object();
    body += event("content_block_start", json{{"type", "content_block_start"},
                                              {"index", index_},
                                              {"content_block", std::move(start)}});
    body += event("content_block_delta",
                  json{{"type", "content_block_delta"},
                       {"index", index_},
                       {"delta",
                        {{"type", "input_json_delta"},
                         {"partial_json", dump_json(tool_input(c.arguments_json))}}}});
    body += event("content_block_stop", json{{"type", "content_block_stop"}, {"index", index_}});
  }
  body += event("message_delta",
                json{{"type", "message_delta"},
                     {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
                     {"usage", usage_json(usage)}});
  body += cache_trace_comment(r.trace);
  body += event("message_stop", json{{"type", "message_stop"}});
  return out.write(body);
}

void AnthropicRenderer::fail(ChunkWriter& out, const ApiError& err) {
  out.fail(err, "event: error\ndata: " + err.to_anthropic_json() + "\n\n");
}

}  // namespace recur::server
