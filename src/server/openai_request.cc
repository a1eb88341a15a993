#include "server/openai_request.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "server/json_fields.h"

namespace recur::server {
namespace {

using json = nlohmann::json;

std::optional<ApiError> read_int(const json& obj, const char* key, std::optional<std::int64_t>& out,
                                 std::int64_t lo, std::int64_t hi) {
  const bool max_tokens =
      key == std::string_view("max_tokens") || key == std::string_view("max_completion_tokens");
  return server::read_int(obj, key, out, lo, hi, max_tokens ? "max_tokens_limit" : "");
}

std::optional<ApiError> parse_stop(const json& body, const RequestLimits& limits,
                                   std::vector<std::string>& out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string())
        return wrong_type(fmt::format("stop[{}]", i), "a string", (*it)[i]);
      out.push_back((*it)[i].get<std::string>());
    }
  } else {
    return wrong_type("stop", "a string or an array of strings", *it);
  }
  if (out.size() > limits.max_stop_strings) {
    return invalid_request("stop",
                           fmt::format("at most {} stop strings are allowed, got {}",
                                       limits.max_stop_strings, out.size()),
                           "limit_exceeded");
  }
  for (auto& s : out) {
    if (s.empty()) return invalid_request("stop", "stop strings must not be empty");
    if (s.size() > limits.max_stop_string_bytes) {
      return invalid_request(
          "stop",
          fmt::format("a stop string may have at most {} bytes", limits.max_stop_string_bytes),
          "limit_exceeded");
    }
  }
  return std::nullopt;
}

// {"token id": bias}: ids are checked against the vocabulary by the service.
std::optional<ApiError> parse_logit_bias(const json& body, const RequestLimits& limits,
                                         engine::SamplingParams& s) {
  auto lb = body.find("logit_bias");
  if (lb == body.end() || lb->is_null()) return std::nullopt;
  if (!lb->is_object()) return wrong_type("logit_bias", "an object of token id -> bias", *lb);
  if (lb->size() > limits.max_logit_bias) {
    return invalid_request("logit_bias",
                           fmt::format("logit_bias may name at most {} tokens, got {}",
                                       limits.max_logit_bias, lb->size()),
                           "limit_exceeded");
  }
  for (const auto& [key, value] : lb->items()) {
    const std::string at = "logit_bias." + key;
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 || id > INT32_MAX) {
      return invalid_request(at, fmt::format("logit_bias keys must be token ids (non-negative "
                                             "integers), got '{}'",
                                             key));
    }
    if (!value.is_number()) return wrong_type(at, "a number", value);
    const double v = value.get<double>();
    if (!(v >= -100 && v <= 100)) {
      return invalid_request(at, fmt::format("'{}' must be in [-100, 100], got {}", at, v));
    }
    s.logit_bias.emplace_back(static_cast<engine::TokenId>(id), static_cast<float>(v));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_generation(const json& body, const RequestLimits& limits,
                                         GenerationFields& g) {
  RECUR_TRY_FIELD(read_string(body, "model", g.model));
  auto& s = g.sampling;
  RECUR_TRY_FIELD(read_number(body, "temperature", s.temperature, 0.0, 2.0));
  RECUR_TRY_FIELD(read_number(body, "top_p", s.top_p, 0.0, 1.0));
  if (body.contains("top_p") && body["top_p"].is_number() && s.top_p <= 0.0f) {
    return invalid_request("top_p", "'top_p' must be greater than 0");
  }
  std::optional<std::int64_t> top_k;
  RECUR_TRY_FIELD(read_int(body, "top_k", top_k, -1, 1 << 30));
  if (top_k) s.top_k = *top_k < 0 ? 0 : static_cast<int>(*top_k);  // -1 means no limit (vLLM)
  RECUR_TRY_FIELD(read_number(body, "min_p", s.min_p, 0.0, 1.0));
  RECUR_TRY_FIELD(read_number(body, "presence_penalty", s.presence_penalty, -2.0, 2.0));
  RECUR_TRY_FIELD(read_number(body, "frequency_penalty", s.frequency_penalty, -2.0, 2.0));
  RECUR_TRY_FIELD(read_number(body, "repetition_penalty", s.repetition_penalty, 0.01, 10.0));
  std::optional<std::int64_t> seed;
  RECUR_TRY_FIELD(read_int(body, "seed", seed, INT64_MIN / 2, INT64_MAX / 2));
  if (seed) {
    s.seed = static_cast<std::uint64_t>(*seed);
    g.seed_given = true;
  }
  std::optional<std::int64_t> max_tokens;
  RECUR_TRY_FIELD(read_int(body, "max_tokens", max_tokens, 1, limits.max_tokens_cap));
  std::optional<std::int64_t> max_completion;
  RECUR_TRY_FIELD(
      read_int(body, "max_completion_tokens", max_completion, 1, limits.max_tokens_cap));
  g.max_tokens = max_completion ? max_completion : max_tokens;
  std::optional<std::int64_t> n;
  RECUR_TRY_FIELD(read_int(body, "n", n, 1, 1));
  RECUR_TRY_FIELD(parse_stop(body, limits, g.stop));
  RECUR_TRY_FIELD(read_bool(body, "ignore_eos", g.ignore_eos));
  RECUR_TRY_FIELD(read_bool(body, "stream", g.stream));
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    RECUR_TRY_FIELD(read_bool(*it, "include_usage", g.include_usage));
  }
  RECUR_TRY_FIELD(parse_logit_bias(body, limits, g.sampling));
  RECUR_TRY_FIELD(read_string(body, "prompt_cache_key", g.prompt_cache_key));
  RECUR_TRY_FIELD(read_string(body, "user", g.user));
  RECUR_TRY_FIELD(read_string(body, "cache_salt", g.cache_salt));
  return std::nullopt;
}

std::optional<ApiError> parse_tool_calls(const json& arr, const std::string& where,
                                         std::vector<chat::ToolCall>& out) {
  if (!arr.is_array()) return wrong_type(where, "an array", arr);
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& tc = arr[i];
    std::string at = fmt::format("{}[{}]", where, i);
    if (!tc.is_object()) return wrong_type(at, "an object", tc);
    chat::ToolCall call;
    RECUR_TRY_FIELD(read_string(tc, "id", call.id, at + "."));
    auto fn = tc.find("function");
    if (fn == tc.end() || !fn->is_object()) {
      return invalid_request(at + ".function", fmt::format("'{}.function' must be an object", at));
    }
    RECUR_TRY_FIELD(read_string(*fn, "name", call.name, at + ".function."));
    if (call.name.empty())
      return invalid_request(at + ".function.name", "a tool call needs a name");
    auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null()) {
      call.arguments_json = "{}";
    } else if (args->is_string()) {
      call.arguments_json = args->get<std::string>();
    } else {
      call.arguments_json = args->dump();  // some clients send the object itself
    }
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

// One content part: text, or an assistant's refusal (its text); media are refused by name.
std::optional<ApiError> parse_part(const json& part, const std::string& at, chat::Message& out) {
  if (!part.is_object()) return wrong_type(at, "an object", part);
  chat::ContentPart p;
  RECUR_TRY_FIELD(read_string(part, "type", p.type, at + "."));
  if (p.type == "refusal") {
    RECUR_TRY_FIELD(read_string(part, "refusal", p.text, at + "."));
    p.type = "text";
  } else if (p.type == "text") {
    RECUR_TRY_FIELD(read_string(part, "text", p.text, at + "."));
  } else {
    return unsupported_part(at + ".type", p.type, "text and refusal");
  }
  out.content_parts.push_back(std::move(p));
  return std::nullopt;
}

// vLLM's continue_final_message and add_generation_prompt; without them a final assistant
// message with text is continued, as llama.cpp does.
std::optional<ApiError> parse_prompt_end(const json& body, ChatRequest& req) {
  std::optional<bool> add, cont;
  for (auto [key, out] :
       {std::pair{"add_generation_prompt", &add}, std::pair{"continue_final_message", &cont}}) {
    bool v = false;
    if (body.contains(key) && !body[key].is_null()) {
      RECUR_TRY_FIELD(read_bool(body, key, v));
      *out = v;
    }
  }
  if (cont.value_or(false) && add.value_or(false)) {
    return invalid_request("continue_final_message",
                           "'continue_final_message' and 'add_generation_prompt' cannot both be "
                           "true");
  }
  if (cont.value_or(false) && !ends_with_prefill(req.messages)) {
    return invalid_request("continue_final_message",
                           "'continue_final_message' needs a final assistant message with text "
                           "and no tool calls");
  }
  req.continue_final_message = cont.value_or(!add.has_value() && ends_with_prefill(req.messages));
  req.add_generation_prompt = !req.continue_final_message && add.value_or(true);
  return std::nullopt;
}

// OpenAI's reasoning_effort (the Vercel AI SDK sends it for `reasoningEffort`) and the
// chat_template_kwargs extension become the template's variables; an explicit kwarg wins.
std::optional<ApiError> parse_template_kwargs(const json& body, ChatRequest& req) {
  json kwargs = json::object();
  RECUR_TRY_FIELD(read_reasoning_effort(body, "reasoning_effort", kwargs));
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) return wrong_type("chat_template_kwargs", "an object", *k);
    for (const auto& [name, value] : k->items()) kwargs[name] = value;
  }
  if (!kwargs.empty()) req.chat_template_kwargs_json = kwargs.dump();
  return std::nullopt;
}

std::optional<ApiError> parse_message(const json& m, size_t index, chat::Message& out) {
  std::string at = fmt::format("messages[{}]", index);
  if (!m.is_object()) return wrong_type(at, "an object", m);
  RECUR_TRY_FIELD(read_string(m, "role", out.role, at + "."));
  static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  bool known = false;
  for (const char* r : kRoles) known = known || out.role == r;
  if (!known) {
    return invalid_request(
        at + ".role", fmt::format("'{}.role' must be one of system, developer, user, assistant, "
                                  "tool; got '{}'",
                                  at, out.role));
  }
  auto content = m.find("content");
  if (content != m.end() && !content->is_null()) {
    if (content->is_string()) {
      out.content = content->get<std::string>();
    } else if (content->is_array()) {
      out.content_is_parts = true;
      for (size_t j = 0; j < content->size(); ++j) {
        RECUR_TRY_FIELD(parse_part((*content)[j], fmt::format("{}.content[{}]", at, j), out));
      }
    } else {
      return wrong_type(at + ".content", "a string or an array of content parts", *content);
    }
  }
  // reasoning_content as vLLM and recur return it; reasoning as some clients echo it back.
  for (const char* key : {"reasoning_content", "reasoning"}) {
    std::string reasoning;
    if (m.contains(key) && !m[key].is_null() && !out.reasoning_content) {
      RECUR_TRY_FIELD(read_string(m, key, reasoning, at + "."));
      out.reasoning_content = reasoning;
    }
  }
  if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
    if (out.role != "assistant") {
      return invalid_request(at + ".tool_calls", "only assistant messages may have tool_calls");
    }
    RECUR_TRY_FIELD(parse_tool_calls(*tc, at + ".tool_calls", out.tool_calls));
  }
  std::string s;
  if (m.contains("tool_call_id") && !m["tool_call_id"].is_null()) {
    RECUR_TRY_FIELD(read_string(m, "tool_call_id", s, at + "."));
    out.tool_call_id = s;
  }
  if (m.contains("name") && !m["name"].is_null()) {
    RECUR_TRY_FIELD(read_string(m, "name", s, at + "."));
    out.name = s;
  }
  bool has_content = out.content.has_value() || out.content_is_parts;
  if (!has_content && !(out.role == "assistant" && !out.tool_calls.empty())) {
    return invalid_request(at + ".content", fmt::format("'{}.content' is required", at));
  }
  return std::nullopt;
}

Parsed<json> parse_body(std::string_view body, const RequestLimits& limits) {
  return parse_json_body<json>(body, limits.max_json_depth);
}

}  // namespace

bool ends_with_prefill(const std::vector<chat::Message>& messages) {
  if (messages.empty()) return false;
  const chat::Message& m = messages.back();
  return m.role == "assistant" && m.tool_calls.empty() &&
         m.text().find_first_not_of(" \t\r\n") != std::string::npos;
}

ApiError unsupported_part(const std::string& param, std::string_view type, const char* accepted) {
  static constexpr std::string_view kMedia[] = {
      "image_url", "input_image", "image", "input_audio", "audio",        "input_file",
      "file",      "document",    "video", "video_url",   "search_result"};
  for (std::string_view media : kMedia) {
    if (type == media) {
      return invalid_request(param, fmt::format("content part type '{}' is not supported: recur "
                                                "serves text-only models",
                                                type));
    }
  }
  return invalid_request(
      param, fmt::format("content part type '{}' is not supported ({} are)", type, accepted));
}

Parsed<ChatRequest> parse_chat_request(std::string_view text, const RequestLimits& limits) {
  auto parsed = parse_body(text, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& body = std::get<json>(parsed);
  ChatRequest req;
  if (auto e = parse_generation(body, limits, req.gen)) return *e;
  auto msgs = body.find("messages");
  if (msgs == body.end()) return invalid_request("messages", "'messages' is required");
  if (!msgs->is_array()) return wrong_type("messages", "an array", *msgs);
  if (msgs->empty()) return invalid_request("messages", "'messages' must not be empty");
  if (msgs->size() > limits.max_messages) {
    return invalid_request(
        "messages",
        fmt::format("at most {} messages are allowed, got {}", limits.max_messages, msgs->size()),
        "limit_exceeded");
  }
  req.messages.resize(msgs->size());
  for (size_t i = 0; i < msgs->size(); ++i) {
    if (auto e = parse_message((*msgs)[i], i, req.messages[i])) return *e;
  }
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) return wrong_type("tools", "an array", *t);
    json functions = json::array();
    for (size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string at = fmt::format("tools[{}]", i);
      if (!tool.is_object()) return wrong_type(at, "an object", tool);
      std::string type = "function";
      if (auto e = read_string(tool, "type", type, at + ".")) return *e;
      if (type != "function") {
        // Custom (free-form grammar) tools and anything newer: not a JSON function call.
        if (auto e =
                leave_out_tool(limits.unsupported_tools, at + ".type", type, req.dropped_tools)) {
          return *e;
        }
        continue;
      }
      if (!tool.contains("function") || !tool["function"].is_object() ||
          !tool["function"].contains("name") || !tool["function"]["name"].is_string()) {
        return invalid_request(at, fmt::format("'{}' must be {{\"type\":\"function\",\"function\":"
                                               "{{\"name\":...}}}}",
                                               at));
      }
      functions.push_back(tool);
    }
    if (!functions.empty()) req.tools_json = functions.dump();
    if (req.tools_json.size() > limits.max_tools_json_bytes) {
      return invalid_request(
          "tools",
          fmt::format("tool definitions may take at most {} bytes", limits.max_tools_json_bytes),
          "limit_exceeded");
    }
  }
  if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
    if (tc->is_string()) {
      std::string c = tc->get<std::string>();
      if (c != "auto" && c != "none" && c != "required") {
        return invalid_request("tool_choice",
                               "'tool_choice' must be auto, none, required or an "
                               "object naming a function");
      }
    } else if (!tc->is_object()) {
      return wrong_type("tool_choice", "a string or an object", *tc);
    }
    req.tool_choice_json = tc->dump();
  }
  if (auto e = read_bool(body, "parallel_tool_calls", req.parallel_tool_calls)) return *e;
  if (auto e = parse_prompt_end(body, req)) return *e;
  if (auto e = parse_template_kwargs(body, req)) return *e;
  if (body.contains("response_format") || body.contains("grammar")) {
    // Again in key order: a schema's properties are generated in the order the client wrote them.
    auto ordered = nlohmann::ordered_json::parse(text, nullptr, false);
    if (auto e = parse_chat_output_format(ordered, req.output_format)) return *e;
  }
  auto lp = body.find("logprobs");
  if (lp != body.end() && !lp->is_null()) {
    if (!lp->is_boolean()) return wrong_type("logprobs", "a boolean", *lp);
    req.gen.sampling.logprobs = lp->get<bool>();
  }
  std::optional<std::int64_t> top_lp;
  if (auto e = read_int(body, "top_logprobs", top_lp, 0, 20)) return *e;
  if (top_lp) {
    if (!req.gen.sampling.logprobs) {
      return invalid_request("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    }
    req.gen.sampling.top_logprobs = static_cast<int>(*top_lp);
  }
  return req;
}

Parsed<CompletionRequest> parse_completion_request(std::string_view text,
                                                   const RequestLimits& limits) {
  auto parsed = parse_body(text, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& body = std::get<json>(parsed);
  CompletionRequest req;
  if (auto e = parse_generation(body, limits, req.gen)) return *e;
  auto p = body.find("prompt");
  if (p == body.end() || p->is_null()) return invalid_request("prompt", "'prompt' is required");
  if (p->is_string()) {
    req.prompt = p->get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    req.prompt = (*p)[0].get<std::string>();
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
    std::vector<std::int32_t> ids;
    for (size_t i = 0; i < p->size(); ++i) {
      const json& v = (*p)[i];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
          v.get<std::int64_t>() > INT32_MAX) {
        return invalid_request(fmt::format("prompt[{}]", i), "token ids must be integers >= 0");
      }
      ids.push_back(static_cast<std::int32_t>(v.get<std::int64_t>()));
    }
    req.prompt = std::move(ids);
  } else {
    return invalid_request("prompt",
                           "'prompt' must be a string, a one-element array of strings, "
                           "or an array of token ids (batches of prompts are not supported)");
  }
  if (auto e = read_bool(body, "echo", req.echo)) return *e;
  if (body.contains("response_format") || body.contains("grammar")) {
    auto ordered = nlohmann::ordered_json::parse(text, nullptr, false);
    if (auto e = parse_chat_output_format(ordered, req.output_format)) return *e;
  }
  std::optional<std::int64_t> lp;
  if (auto e = read_int(body, "logprobs", lp, 0, 20)) return *e;
  if (lp) {
    req.gen.sampling.logprobs = true;
    req.gen.sampling.top_logprobs = static_cast<int>(*lp);
  }
  return req;
}

}  // namespace recur::server
