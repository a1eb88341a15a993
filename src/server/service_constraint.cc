// Constrained decoding for a turn: the request's output format or its tool_choice (a forced,
// forbidden or strict call) compiled into the grammar the engine enforces, and logit_bias checked
// against the vocabulary. Every refusal names the field.
#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "server/service.h"
#include "server/tool_choice_grammar.h"

namespace recur::server {
namespace {

// A thinking model writes "</think>\n\n" before its answer: the grammar starts after the tag and
// lets those newlines through.
std::string after_reasoning(const std::string& gbnf) {
  return "recur-answer ::= \"\\n\"{0,2} root\n" + gbnf;
}

// The grammar of a json_object, json_schema or grammar format.
Parsed<std::string> format_gbnf(const OutputFormat& f) {
  if (f.kind == OutputFormat::Kind::kJsonObject) return grammar::json_object_gbnf();
  if (f.kind == OutputFormat::Kind::kGrammar) return f.grammar;
  auto schema = nlohmann::ordered_json::parse(f.schema_json, nullptr, false);
  if (schema.is_discarded()) return invalid_request(f.param, "the schema is not valid JSON");
  auto compiled = grammar::json_schema_to_gbnf(schema, {});
  if (!compiled) {
    return invalid_request(f.param, fmt::format("'{}' {}", f.param, compiled.status().message()),
                           "unsupported_schema");
  }
  return std::move(compiled->gbnf);
}

}  // namespace

Parsed<std::shared_ptr<const engine::ConstraintSpec>> Service::constraint_for(
    const OutputFormat& f) {
  if (f.kind == OutputFormat::Kind::kText) return std::shared_ptr<const engine::ConstraintSpec>();
  auto g = format_gbnf(f);
  if (const ApiError* e = as_error(g)) return *e;
  auto compiled = grammars_->get(std::get<std::string>(g), "root");
  if (!compiled) {
    return invalid_request(f.param, fmt::format("'{}': {}", f.param, compiled.status().message()),
                           f.param == "grammar" ? "invalid_grammar" : "unsupported_schema");
  }
  auto spec = std::make_shared<engine::ConstraintSpec>();
  spec->grammar = std::move(compiled).value();
  return std::shared_ptr<const engine::ConstraintSpec>(std::move(spec));
}

std::optional<ApiError> Service::check_logit_bias(const GenerationFields& gen) const {
  const auto vocab = static_cast<std::int64_t>(backend_.tokenizer->vocab_size());
  for (const auto& [id, bias] : gen.sampling.logit_bias) {
    if (id < 0 || id >= vocab) {
      return invalid_request(fmt::format("logit_bias.{}", id),
                             fmt::format("logit_bias names token {}, outside the vocabulary "
                                         "(ids 0 to {})",
                                         id, vocab - 1));
    }
  }
  return std::nullopt;
}

Parsed<std::shared_ptr<const engine::ConstraintSpec>> Service::constraint_for(
    const ChatRequest& req, const chat::Prompt& prompt) {
  std::string gbnf, param;
  const OutputFormat& f = req.output_format;
  // A requested output format governs the reply; strict tools under tool_choice auto then do not.
  Parsed<std::string> tool_grammar = std::string();
  if (f.kind == OutputFormat::Kind::kText || forces_tool_call(req)) {
    const CallSyntax syntax =
        call_syntax(backend_.formatter->template_source(),
                    backend_.tokenizer->token_id("<|tool_call_start|>").has_value());
    tool_grammar = forced_tool_call_gbnf(req, syntax);
  }
  if (const ApiError* e = as_error(tool_grammar)) return *e;
  if (auto* g = std::get_if<std::string>(&tool_grammar); g != nullptr && !g->empty()) {
    if (f.kind != OutputFormat::Kind::kText) {
      return invalid_request("tool_choice", fmt::format("a forced tool call cannot be combined "
                                                        "with '{}'",
                                                        f.param));
    }
    gbnf = std::move(*g);
    param = "tool_choice";
  } else if (f.kind != OutputFormat::Kind::kText) {
    auto text = format_gbnf(f);
    if (const ApiError* e = as_error(text)) return *e;
    gbnf = std::get<std::string>(std::move(text));
    param = f.param;
  } else {
    return std::shared_ptr<const engine::ConstraintSpec>();
  }
  const bool reasoning = backend_.formatter->has_reasoning();
  auto compiled =
      grammars_->get(reasoning ? after_reasoning(gbnf) : gbnf, reasoning ? "recur-answer" : "root");
  if (!compiled) {
    return invalid_request(param, fmt::format("'{}': {}", param, compiled.status().message()),
                           param == "grammar" ? "invalid_grammar" : "unsupported_schema");
  }
  auto spec = std::make_shared<engine::ConstraintSpec>();
  spec->grammar = std::move(compiled).value();
  if (reasoning) {
    const tokenizer::Tokenizer& tok = *backend_.tokenizer;
    // A generation prompt that closes an (empty) reasoning block (thinking off) leaves none to
    // open: the grammar starts at the first token.
    std::string_view text = prompt.text;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (!text.ends_with("</think>")) spec->reasoning_open = tok.token_id("<think>").value_or(-1);
    spec->reasoning_close = tok.token_id("</think>").value_or(-1);
    spec->starts_in_reasoning = prompt.starts_in_reasoning;
  }
  return std::shared_ptr<const engine::ConstraintSpec>(std::move(spec));
}

}  // namespace recur::server
