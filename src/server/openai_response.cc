#include "server/openai_response.h"

#include <nlohmann/json.hpp>

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& s) {
  json arr = json::array();
  for (unsigned char c : s) arr.push_back(static_cast<int>(c));
  return arr;
}

json token_entry(engine::TokenId id, float logprob, const tokenizer::Tokenizer& tok) {
  std::span<const engine::TokenId> one(&id, 1);
  std::string raw = tok.decode_raw(one);
  return json{{"token", tok.decode(one)}, {"logprob", logprob}, {"bytes", bytes_of(raw)}};
}

json logprobs_content(const std::vector<LogprobEntry>& entries, const tokenizer::Tokenizer& tok) {
  json content = json::array();
  for (const auto& s : entries) {
    // `token` is the text the token completed (the tokens' texts concatenate to the content);
    // `bytes` are its bytes, the raw ones where the decoder made U+FFFD of invalid UTF-8.
    json e = {{"token", s.text}, {"logprob", s.logprob}, {"bytes", bytes_of(s.bytes)}};
    json top = json::array();
    for (const auto& t : s.top) top.push_back(token_entry(t.id, t.logprob, tok));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return content;
}

json usage_object(const engine::Usage& u, std::optional<std::int64_t> reasoning_tokens) {
  json out = {{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  if (reasoning_tokens) {
    out["completion_tokens_details"] = {{"reasoning_tokens", *reasoning_tokens}};
  }
  return out;
}

json tool_calls_array(const std::vector<chat::ToolCall>& calls, bool with_index) {
  json arr = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = json::object();
    if (with_index) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments_json}};
    arr.push_back(std::move(c));
  }
  return arr;
}

json envelope(const ResponseMeta& meta, const char* object) {
  return json{
      {"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

std::string finish_reason_text(engine::FinishReason reason, bool has_tool_calls) {
  if (has_tool_calls) return "tool_calls";
  return reason == engine::FinishReason::kLength ? "length" : "stop";
}

std::string chat_logprobs_json(const std::vector<LogprobEntry>& entries,
                               const tokenizer::Tokenizer& tok) {
  return dump(logprobs_content(entries, tok));
}

std::string usage_json(const engine::Usage& usage, std::optional<std::int64_t> reasoning_tokens) {
  return dump(usage_object(usage, reasoning_tokens));
}

std::string chat_completion_json(const ResponseMeta& meta, const ChatResult& r,
                                 const tokenizer::Tokenizer& tok) {
  json msg = {{"role", "assistant"}};
  msg["content"] = r.content.empty() && !r.tool_calls.empty() ? json(nullptr) : json(r.content);
  if (r.reasoning_content) msg["reasoning_content"] = *r.reasoning_content;
  if (!r.tool_calls.empty()) msg["tool_calls"] = tool_calls_array(r.tool_calls, false);
  json choice = {{"index", 0}, {"message", std::move(msg)}};
  choice["logprobs"] =
      r.logprobs ? json{{"content", logprobs_content(r.logprob_entries, tok)}} : json(nullptr);
  choice["finish_reason"] = r.finish_reason;
  json out = envelope(meta, "chat.completion");
  out["choices"] = json::array({std::move(choice)});
  out["usage"] = usage_object(r.usage, r.reasoning_tokens);
  add_recur_fields(out, r.recur);
  return dump(out);
}

std::string chat_chunk_sse(const ResponseMeta& meta, const ChatDelta& d,
                           const tokenizer::Tokenizer& tok) {
  json delta = json::object();
  if (d.role) delta["role"] = "assistant";
  if (d.role || !d.content.empty()) delta["content"] = d.content;
  if (!d.reasoning_content.empty()) delta["reasoning_content"] = d.reasoning_content;
  if (!d.tool_calls.empty()) delta["tool_calls"] = tool_calls_array(d.tool_calls, true);
  json choice = {{"index", 0}, {"delta", std::move(delta)}};
  choice["logprobs"] = d.logprobs && !d.logprob_entries.empty()
                           ? json{{"content", logprobs_content(d.logprob_entries, tok)}}
                           : json(nullptr);
  choice["finish_reason"] = d.finish_reason ? json(*d.finish_reason) : json(nullptr);
  json out = envelope(meta, "chat.completion.chunk");
  out["choices"] = json::array({std::move(choice)});
  add_recur_fields(out, d.recur);
  return "data: " + dump(out) + "\n\n";
}

namespace {
std::string usage_chunk_sse(const ResponseMeta& meta, const engine::Usage& usage,
                            const char* object, std::optional<std::int64_t> reasoning_tokens) {
  json out = envelope(meta, object);
  out["choices"] = json::array();
  out["usage"] = usage_object(usage, reasoning_tokens);
  return "data: " + dump(out) + "\n\n";
}
}  // namespace

std::string text_usage_chunk_sse(const ResponseMeta& meta, const engine::Usage& usage) {
  return usage_chunk_sse(meta, usage, "text_completion", std::nullopt);
}

std::string chat_usage_chunk_sse(const ResponseMeta& meta, const engine::Usage& usage,
                                 std::int64_t reasoning_tokens) {
  return usage_chunk_sse(meta, usage, "chat.completion.chunk", reasoning_tokens);
}

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_error(const std::string& error_json) { return "data: " + error_json + "\n\n"; }

std::string text_completion_json(const ResponseMeta& meta, const TextResult& r,
                                 const tokenizer::Tokenizer& tok) {
  json choice = {{"text", r.text}, {"index", 0}};
  if (r.logprobs) {
    json tokens = json::array(), token_lps = json::array(), tops = json::array();
    for (const auto& s : r.samples) {
      engine::TokenId id = s.id;
      tokens.push_back(tok.decode(std::span<const engine::TokenId>(&id, 1)));
      token_lps.push_back(s.logprob);
      json top = json::object();
      for (const auto& t : s.top) {
        engine::TokenId tid = t.id;
        top[tok.decode(std::span<const engine::TokenId>(&tid, 1))] = t.logprob;
      }
      tops.push_back(std::move(top));
    }
    choice["logprobs"] = {
        {"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}};
  } else {
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = r.finish_reason;
  json out = envelope(meta, "text_completion");
  out["choices"] = json::array({std::move(choice)});
  out["usage"] = usage_object(r.usage, std::nullopt);
  add_recur_fields(out, r.recur);
  return dump(out);
}

std::string text_chunk_sse(const ResponseMeta& meta, const std::string& text,
                           const std::optional<std::string>& finish_reason,
                           const RecurFields& recur) {
  json choice = {{"text", text}, {"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish_reason ? json(*finish_reason) : json(nullptr);
  json out = envelope(meta, "text_completion");
  out["choices"] = json::array({std::move(choice)});
  add_recur_fields(out, recur);
  return "data: " + dump(out) + "\n\n";
}

}  // namespace recur::server
