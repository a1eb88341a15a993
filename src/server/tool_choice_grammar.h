// Forced and forbidden tool calls as grammars, in the tool-call syntax of the model's chat
// template: tool_choice "required" (Anthropic "any") or a named function makes the reply one or
// more calls (only the named one) with arguments under each tool's parameter schema; "none" with
// tools declared forbids the call syntax. Syntaxes: Qwen3 / Hermes JSON in <tool_call> tags,
// Qwen3.5 XML parameters, LFM2's Python call list, Llama 3 JSON, gpt-oss's harmony (its call's
// header is made of special tokens, which a grammar cannot write: the prompt ends with it, and the
// grammar is the arguments').
#pragma once

#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace recur::server {

enum class CallSyntax : std::uint8_t { kUnknown, kHermes, kXml, kLlama, kPythonic, kHarmony };
// From the template's text; a template that does not spell its syntax (LFM2's names the tools
// only) is known by the vocabulary's call marker: pass whether it has <|tool_call_start|>.
CallSyntax call_syntax(std::string_view template_source, bool has_pythonic_marker = false);

// tool_choice "required" or a named tool (rather than auto or none).
bool forces_tool_call(const ChatRequest& req);

// GBNF with root rule `root`; "" when the request leaves the reply free. With tool_choice auto and
// a tool declared `strict: true` (Hermes and Qwen3.5 syntaxes), the reply is free text without
// the call marker, then optionally calls whose arguments match their schemas. A 400 names
// tool_choice when the named tool is not declared, a strict tool's schema cannot be compiled, or
// the template's syntax cannot be forced.
Parsed<std::string> forced_tool_call_gbnf(const ChatRequest& req, CallSyntax syntax);

// gpt-oss (harmony): what the prompt must end with after its generation prompt for the reply to be
// what the request forces: a forced call's header ("<|channel|>commentary to=functions.NAME
// <|constrain|>json<|message|>"), a final message's for an output format, "" for a free reply. A
// forced call must name one function (or only one be declared): the function's name would be
// free text before special tokens, which the grammar cannot write.
Parsed<std::string> harmony_prefill(const ChatRequest& req);

// A GBNF rule set `<name> ::= ...` matching any text that does not contain `marker` (whose first
// byte occurs in it only there), ending anywhere.
std::string text_without_gbnf(std::string_view name, std::string_view marker);

}  // namespace recur::server
