// What a reply must look like, as each API asks for it: OpenAI chat's response_format, the
// Responses API's text.format, Anthropic's output_config.format (and the beta output_format), and
// recur's `grammar` extension (llama.cpp's GBNF). Parsed here into one OutputFormat; the service
// compiles it into the grammar the engine enforces (service_constraint.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace recur::server {

struct OutputFormat {
  enum class Kind : std::uint8_t { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  std::string schema_json;  // kJsonSchema: the schema, compact, in the client's key order
  std::string grammar;      // kGrammar: GBNF text
  std::string name;         // the schema's name, where the API has one
  bool strict = false;
  std::string param;  // the request field it came from: errors name it
};

// OpenAI chat: `response_format` ({"type": "text" | "json_object" | "json_schema", "json_schema":
// {"name", "schema", "strict"}}) and the `grammar` extension; both at once is an error.
std::optional<ApiError> parse_chat_output_format(const nlohmann::ordered_json& body,
                                                 OutputFormat& out);
// Responses: `text.format` ({"type": "text" | "json_object" | "json_schema", "name", "schema",
// "strict"}) and the `grammar` extension.
std::optional<ApiError> parse_responses_output_format(const nlohmann::ordered_json& body,
                                                      OutputFormat& out);
// Anthropic: `output_config.format` and the beta's `output_format` ({"type": "json_schema",
// "schema"}) and the `grammar` extension.
std::optional<ApiError> parse_anthropic_output_format(const nlohmann::ordered_json& body,
                                                      OutputFormat& out);

// The text.format object a Responses reply echoes.
nlohmann::ordered_json responses_text_format(const OutputFormat& format);

}  // namespace recur::server
