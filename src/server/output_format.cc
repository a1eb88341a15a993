#include "server/output_format.h"

#include "server/json_fields.h"

namespace recur::server {
namespace {

using json = nlohmann::ordered_json;

// required: the Responses and Anthropic APIs require a schema; chat's json_schema may leave it out
// (any JSON value then).
std::optional<ApiError> read_schema(const json& holder, const std::string& at, bool required,
                                    OutputFormat& out) {
  auto s = holder.find("schema");
  if (s == holder.end() || s->is_null()) {
    if (required) {
      return invalid_request(at + "schema", fmt::format("'{}schema' is required for type "
                                                        "json_schema",
                                                        at));
    }
    out.schema_json = "{}";
  } else if (s->is_object() || s->is_boolean()) {
    out.schema_json = s->dump();
  } else {
    return wrong_type(at + "schema", "an object", *s);
  }
  out.param = at + "schema";
  RECUR_TRY_FIELD(read_string(holder, "name", out.name, at));
  RECUR_TRY_FIELD(read_bool(holder, "strict", out.strict, at));
  return std::nullopt;
}

// {"type": ...} with the schema inside `schema_holder_key` (chat) or beside the type (Responses,
// Anthropic).
std::optional<ApiError> read_format(const json& f, const std::string& at, const char* holder_key,
                                    bool allow_json_object, OutputFormat& out) {
  if (!f.is_object()) return wrong_type(at, "an object", f);
  auto t = f.find("type");
  if (t == f.end() || !t->is_string()) {
    return invalid_request(at + ".type", fmt::format("'{}.type' is required (a string)", at));
  }
  const std::string type = t->get<std::string>();
  if (type == "text") {
    out.kind = OutputFormat::Kind::kText;
    return std::nullopt;
  }
  if (type == "json_object" && allow_json_object) {
    out.kind = OutputFormat::Kind::kJsonObject;
    out.param = at;
    return std::nullopt;
  }
  if (type == "json_schema") {
    out.kind = OutputFormat::Kind::kJsonSchema;
    if (holder_key == nullptr) return read_schema(f, at + ".", true, out);
    auto h = f.find(holder_key);
    if (h == f.end() || h->is_null()) {
      return invalid_request(
          at + "." + holder_key,
          fmt::format("'{}.{}' is required for type json_schema", at, holder_key));
    }
    if (!h->is_object()) return wrong_type(at + "." + holder_key, "an object", *h);
    return read_schema(*h, at + "." + holder_key + ".", false, out);
  }
  return invalid_request(
      at + ".type",
      fmt::format("'{}.type' must be {}, got '{}'", at,
                  allow_json_object ? "text, json_object or json_schema" : "json_schema", type));
}

std::optional<ApiError> read_grammar(const json& body, OutputFormat& out) {
  auto g = body.find("grammar");
  if (g == body.end() || g->is_null()) return std::nullopt;
  if (!g->is_string()) return wrong_type("grammar", "a string (GBNF)", *g);
  if (out.kind != OutputFormat::Kind::kText) {
    return invalid_request("grammar", fmt::format("'grammar' cannot be combined with '{}'",
                                                  out.param.substr(0, out.param.find('.'))));
  }
  out.kind = OutputFormat::Kind::kGrammar;
  out.grammar = g->get<std::string>();
  out.param = "grammar";
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_chat_output_format(const json& body, OutputFormat& out) {
  if (auto f = body.find("response_format"); f != body.end() && !f->is_null()) {
    RECUR_TRY_FIELD(read_format(*f, "response_format", "json_schema", true, out));
  }
  return read_grammar(body, out);
}

std::optional<ApiError> parse_responses_output_format(const json& body, OutputFormat& out) {
  if (auto t = body.find("text"); t != body.end() && !t->is_null()) {
    if (!t->is_object()) return wrong_type("text", "an object", *t);
    if (auto f = t->find("format"); f != t->end() && !f->is_null()) {
      RECUR_TRY_FIELD(read_format(*f, "text.format", nullptr, true, out));
    }
  }
  return read_grammar(body, out);
}

std::optional<ApiError> parse_anthropic_output_format(const json& body, OutputFormat& out) {
  if (auto c = body.find("output_config"); c != body.end() && !c->is_null()) {
    if (!c->is_object()) return wrong_type("output_config", "an object", *c);
    if (auto f = c->find("format"); f != c->end() && !f->is_null()) {
      RECUR_TRY_FIELD(read_format(*f, "output_config.format", nullptr, false, out));
    }
  }
  if (auto f = body.find("output_format"); f != body.end() && !f->is_null()) {
    if (out.kind != OutputFormat::Kind::kText) {
      return invalid_request("output_format",
                             "'output_format' cannot be combined with 'output_config.format'");
    }
    RECUR_TRY_FIELD(read_format(*f, "output_format", nullptr, false, out));
  }
  return read_grammar(body, out);
}

json responses_text_format(const OutputFormat& format) {
  switch (format.kind) {
    case OutputFormat::Kind::kJsonObject:
      return json{{"type", "json_object"}};
    case OutputFormat::Kind::kJsonSchema: {
      json f{{"type", "json_schema"}};
      if (!format.name.empty()) f["name"] = format.name;
      f["schema"] = json::parse(format.schema_json);
      f["strict"] = format.strict;
      return f;
    }
    default:
      return json{{"type", "text"}};
  }
}

}  // namespace recur::server
