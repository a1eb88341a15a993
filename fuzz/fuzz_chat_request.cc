// libFuzzer target: the OpenAI chat-completions and completions request parsers with the server's
// default limits. Every body must give a request within the limits or a 400 that names a field.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "server/openai_request.h"
#include "util/check.h"

namespace {

using recur::server::ApiError;

void check_error(const ApiError& e) {
  RECUR_CHECK(e.http_status == 400);
  RECUR_CHECK(!e.message.empty());
  auto j = nlohmann::json::parse(e.to_json(), nullptr, /*allow_exceptions=*/false);
  RECUR_CHECK(!j.is_discarded() && j.contains("error"));
}

void check_generation(const recur::server::GenerationFields& g,
                      const recur::server::RequestLimits& limits) {
  RECUR_CHECK(g.stop.size() <= limits.max_stop_strings);
  for (const auto& s : g.stop) RECUR_CHECK(!s.empty() && s.size() <= limits.max_stop_string_bytes);
  if (g.max_tokens) RECUR_CHECK(*g.max_tokens >= 1 && *g.max_tokens <= limits.max_tokens_cap);
  RECUR_CHECK(g.sampling.temperature >= 0 && g.sampling.temperature <= 2);
  RECUR_CHECK(g.sampling.top_p > 0 && g.sampling.top_p <= 1);
}

bool valid_json(const std::string& text) {
  return !nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const recur::server::RequestLimits limits;

  auto chat = recur::server::parse_chat_request(body, limits);
  if (auto* e = std::get_if<ApiError>(&chat)) {
    check_error(*e);
  } else {
    const auto& req = std::get<recur::server::ChatRequest>(chat);
    check_generation(req.gen, limits);
    RECUR_CHECK(!req.messages.empty() && req.messages.size() <= limits.max_messages);
    RECUR_CHECK(req.tools_json.size() <= limits.max_tools_json_bytes);
    if (!req.tools_json.empty()) RECUR_CHECK(valid_json(req.tools_json));
    if (!req.tool_choice_json.empty()) RECUR_CHECK(valid_json(req.tool_choice_json));
    if (!req.chat_template_kwargs_json.empty())
      RECUR_CHECK(valid_json(req.chat_template_kwargs_json));
  }

  auto completion = recur::server::parse_completion_request(body, limits);
  if (auto* e = std::get_if<ApiError>(&completion)) {
    check_error(*e);
  } else {
    const auto& req = std::get<recur::server::CompletionRequest>(completion);
    check_generation(req.gen, limits);
    if (const auto* ids = std::get_if<std::vector<std::int32_t>>(&req.prompt)) {
      RECUR_CHECK(!ids->empty());
      for (std::int32_t id : *ids) RECUR_CHECK(id >= 0);
    }
  }
  return 0;
}
