#include "server/tool_choice_grammar.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "chat/harmony.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace recur::server {

using grammar::gbnf_literal;

namespace {

using json = nlohmann::ordered_json;

struct Tool {
  std::string name;
  json parameters;
  bool strict = false;
};

std::string class_char(char c) {
  if (c == ']' || c == '\\' || c == '^' || c == '-' || c == '[') return std::string("\\") + c;
  return std::string(1, c);
}

// JSON string content of `s` (what json.dumps writes between the quotes, ensure_ascii=False).
std::string json_content(const std::string& s) {
  std::string quoted = json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

Parsed<std::string> compile_schema(const json& schema, bool strict, const std::string& prefix,
                                   const std::string& param) {
  auto out = grammar::json_schema_to_gbnf(schema, {.lenient = !strict});
  if (!out) {
    return invalid_request(param, fmt::format("'{}' {}", param, out.status().message()),
                           "unsupported_schema");
  }
  return grammar::prefix_rules(out->gbnf, prefix);
}

bool is_string_schema(const json& s) {
  auto t = s.find("type");
  return t != s.end() && t->is_string() && t->get<std::string>() == "string";
}

// A string parameter's raw value in Qwen3.5's XML: its enum (or const) values as written, else
// free text up to the closing tag (pattern, format and lengths are not enforced on raw text).
std::string raw_string_value(const json& s) {
  std::vector<std::string> values;
  if (auto c = s.find("const"); c != s.end() && c->is_string())
    values.push_back(c->get<std::string>());
  if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
    for (const auto& v : *e) {
      if (v.is_string()) values.push_back(v.get<std::string>());
    }
  }
  if (values.empty()) return "xml-text";
  std::string out = "(";
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i ? " | " : " ") + gbnf_literal(values[i]);
  return out + " )";
}

// The property names a parameter schema requires.
std::vector<std::string> required_names(const json& parameters) {
  std::vector<std::string> out;
  if (auto r = parameters.find("required"); r != parameters.end() && r->is_array()) {
    for (const auto& n : *r) {
      if (n.is_string()) out.push_back(n.get<std::string>());
    }
  }
  return out;
}

// Qwen3.5: <parameter=NAME>\nVALUE\n</parameter>\n per property in schema order; a string value
// is raw text, anything else JSON under its schema.
Parsed<std::string> xml_parameters(const Tool& t, const std::string& prefix, std::string& rules,
                                   const std::string& param) {
  std::string seq;
  const json& props = t.parameters.value("properties", json::object());
  const std::vector<std::string> required = required_names(t.parameters);
  int k = 0;
  for (const auto& [pname, pschema] : props.items()) {
    const std::string rule = fmt::format("{}p{}", prefix, k++);
    std::string value;
    if (!pschema.is_object()) {
      value = "xml-text";
    } else if (is_string_schema(pschema)) {
      value = raw_string_value(pschema);
    } else {
      json sub = pschema;
      for (const char* defs : {"$defs", "definitions"}) {
        if (t.parameters.contains(defs) && !sub.contains(defs)) sub[defs] = t.parameters[defs];
      }
      auto g = compile_schema(sub, t.strict, rule + "-", param);
      if (const ApiError* e = as_error(g)) return *e;
      rules += std::get<std::string>(g);
      value = rule + "-root";
    }
    rules += fmt::format("{} ::= {} {} \"\\n</parameter>\\n\"\n", rule,
                         gbnf_literal("<parameter=" + pname + ">\n"), value);
    const bool req = std::find(required.begin(), required.end(), pname) != required.end();
    seq += " " + rule + (req ? "" : "?");
  }
  return seq;
}

// Python literals where JSON has its own: the schema's grammar with true / false / null spelled
// True / False / None (a GBNF literal that is exactly one of those words is that value: string
// values are quoted inside their literals).
std::string python_literals(std::string gbnf) {
  for (auto [from, to] : {std::pair{"\"true\"", "\"True\""}, std::pair{"\"false\"", "\"False\""},
                          std::pair{"\"null\"", "\"None\""}}) {
    for (std::size_t at = 0; (at = gbnf.find(from, at)) != std::string::npos; at += 1) {
      gbnf.replace(at, std::string_view(from).size(), to);
    }
  }
  return gbnf;
}

// LFM2: name(k1=V1, k2=V2) with the properties in schema order as keyword arguments, each value
// a Python literal under its schema; ", " only between the arguments present.
Parsed<std::string> python_arguments(const Tool& t, const std::string& prefix, std::string& rules,
                                     const std::string& param) {
  const json& props = t.parameters.value("properties", json::object());
  const std::vector<std::string> required = required_names(t.parameters);
  struct Arg {
    std::string rule;
    bool required;
  };
  std::vector<Arg> args;
  for (const auto& [pname, pschema] : props.items()) {
    const std::string rule = fmt::format("{}k{}", prefix, args.size());
    json sub = pschema.is_object() ? pschema : json::object();
    for (const char* defs : {"$defs", "definitions"}) {
      if (t.parameters.contains(defs) && !sub.contains(defs)) sub[defs] = t.parameters[defs];
    }
    auto g = compile_schema(sub, t.strict, rule + "-", param);
    if (const ApiError* e = as_error(g)) return *e;
    rules += python_literals(std::get<std::string>(g));
    rules += fmt::format("{} ::= {} {}-root\n", rule, gbnf_literal(pname + "="), rule);
    args.push_back({rule, std::find(required.begin(), required.end(), pname) != required.end()});
  }
  // first-i: the arguments from i on, none written yet; rest-i: the same after one was written.
  const auto n = args.size();
  for (std::size_t i = n + 1; i-- > 0;) {
    const std::string first = fmt::format("{}first-{}", prefix, i);
    const std::string rest = fmt::format("{}rest-{}", prefix, i);
    if (i == n) {
      rules += first + " ::= \n" + rest + " ::= \n";
      continue;
    }
    const std::string next_first = fmt::format("{}first-{}", prefix, i + 1);
    const std::string next_rest = fmt::format("{}rest-{}", prefix, i + 1);
    const Arg& a = args[i];
    rules += fmt::format("{} ::= {} {}{}\n", first, a.rule, next_rest,
                         a.required ? "" : " | " + next_first);
    rules += fmt::format("{} ::= \", \" {} {}{}\n", rest, a.rule, next_rest,
                         a.required ? "" : " | " + next_rest);
  }
  return fmt::format("{}first-0", prefix);
}

ApiError harmony_one_function() {
  return invalid_request("tool_choice",
                         "gpt-oss's harmony format can force a call only of one named function: "
                         "name it in tool_choice ({\"type\": \"function\", \"function\": "
                         "{\"name\": ...}}) or declare one tool");
}

// The one function a request forces a call of ("" when none is forced); the 400 when several may
// be called.
Parsed<std::string> forced_function(const ChatRequest& req) {
  if (req.tools_json.empty() || req.tool_choice_json.empty()) return std::string();
  const json choice = json::parse(req.tool_choice_json, nullptr, false);
  if (choice.is_object()) {
    if (auto f = choice.find("function"); f != choice.end() && f->is_object()) {
      return f->value("name", "");
    }
    return choice.value("name", "");
  }
  if (!choice.is_string() || choice.get<std::string>() != "required") return std::string();
  const json declared = json::parse(req.tools_json, nullptr, false);
  if (!declared.is_array() || declared.size() != 1) return harmony_one_function();
  const json& f = declared[0].contains("function") ? declared[0]["function"] : declared[0];
  return f.is_object() ? f.value("name", "") : std::string();
}

}  // namespace

Parsed<std::string> harmony_prefill(const ChatRequest& req) {
  if (req.continue_final_message) return std::string();  // the prompt ends inside a message
  auto name = forced_function(req);
  if (const ApiError* e = as_error(name)) return *e;
  const std::string& fn = std::get<std::string>(name);
  if (!fn.empty()) {
    return fmt::format("{}commentary to=functions.{} {}json{}", chat::kHarmonyChannel, fn,
                       chat::kHarmonyConstrain, chat::kHarmonyMessage);
  }
  if (req.output_format.kind != OutputFormat::Kind::kText) {
    return fmt::format("{}final{}", chat::kHarmonyChannel, chat::kHarmonyMessage);
  }
  return std::string();
}

CallSyntax call_syntax(std::string_view src, bool has_pythonic_marker) {
  if (chat::is_harmony_template(src)) return CallSyntax::kHarmony;
  if (src.find("<function=") != std::string_view::npos) return CallSyntax::kXml;
  if (src.find("<tool_call>") != std::string_view::npos) return CallSyntax::kHermes;
  if (src.find("<|tool_call_start|>") != std::string_view::npos) return CallSyntax::kPythonic;
  if (src.find("<|python_tag|>") != std::string_view::npos ||
      src.find("\"parameters\": ") != std::string_view::npos) {
    return CallSyntax::kLlama;
  }
  return has_pythonic_marker ? CallSyntax::kPythonic : CallSyntax::kUnknown;
}

bool forces_tool_call(const ChatRequest& req) {
  if (req.tools_json.empty() || req.tool_choice_json.empty()) return false;
  const json choice = json::parse(req.tool_choice_json, nullptr, false);
  return choice.is_object() || (choice.is_string() && choice.get<std::string>() == "required");
}

std::string text_without_gbnf(std::string_view name, std::string_view marker) {
  // State i: the text ends with marker[0, i). marker[0] occurs nowhere else in it, so a mismatch
  // falls back to state 0 (or 1 on marker[0]).
  const std::string first = class_char(marker[0]);
  const std::size_t n = marker.size();
  auto state = [&](std::size_t i) { return fmt::format("{}-{}", name, i); };
  std::string out = fmt::format("{} ::= {}\n", name, state(0));
  out += fmt::format("{} ::= [^{}] {} | {} {} |\n", state(0), first, state(0),
                     gbnf_literal(marker.substr(0, 1)), state(1));
  for (std::size_t i = 1; i < n; ++i) {
    const std::string next = class_char(marker[i]);
    out += fmt::format("{} ::= [^{}{}] {} | {} {}", state(i), first, next, state(0),
                       gbnf_literal(marker.substr(0, 1)), state(1));
    if (i + 1 < n) out += fmt::format(" | {} {}", gbnf_literal(marker.substr(i, 1)), state(i + 1));
    out += " |\n";
  }
  return out;
}

Parsed<std::string> forced_tool_call_gbnf(const ChatRequest& req, CallSyntax syntax) {
  if (req.tools_json.empty()) return std::string();
  const json choice = req.tool_choice_json.empty()
                          ? json("auto")
                          : json::parse(req.tool_choice_json, nullptr, false);
  std::string forced_name;
  bool forced = false;
  if (choice.is_string()) {
    const std::string c = choice.get<std::string>();
    forced = c == "required";
    if (c == "none") {
      // Harmony's calls are messages of their own, kept as text when tools are off.
      const CallSyntax s = syntax;
      if (s == CallSyntax::kHermes || s == CallSyntax::kXml) {
        return "root ::= free\n" + text_without_gbnf("free", "<tool_call>");
      }
      if (s == CallSyntax::kPythonic) {
        return "root ::= free\n" + text_without_gbnf("free", "<|tool_call_start|>");
      }
      return std::string();  // Llama's calls are bare JSON: nothing marks them to forbid
    }
  } else if (choice.is_object()) {
    forced = true;
    if (auto f = choice.find("function"); f != choice.end() && f->is_object()) {
      forced_name = f->value("name", "");
    } else {
      forced_name = choice.value("name", "");
    }
  }
  // tool_choice auto: free text, but a tool declared strict makes any call that comes exact (the
  // calls that follow the text are constrained; the text stays free of the call marker).
  bool strict_auto = false;
  if (!forced) {
    const json declared = json::parse(req.tools_json, nullptr, false);
    for (const auto& t : declared) {
      const json& f = t.contains("function") ? t["function"] : t;
      strict_auto = strict_auto || (f.is_object() && f.value("strict", false));
    }
    const CallSyntax s = syntax;
    if (!strict_auto ||
        (s != CallSyntax::kHermes && s != CallSyntax::kXml && s != CallSyntax::kPythonic)) {
      return std::string();
    }
  }
  std::vector<Tool> tools;
  const json declared = json::parse(req.tools_json, nullptr, false);
  for (const auto& t : declared) {
    const json& f = t.contains("function") ? t["function"] : t;
    Tool tool{.name = f.value("name", ""),
              .parameters = f.value("parameters", json{{"type", "object"}}),
              .strict = f.value("strict", false)};
    if (!forced_name.empty() && tool.name != forced_name) continue;
    tools.push_back(std::move(tool));
  }
  if (tools.empty()) {
    return invalid_request("tool_choice", fmt::format("tool_choice names '{}', which is not one of "
                                                      "the declared tools",
                                                      forced_name));
  }
  if (syntax == CallSyntax::kUnknown) {
    return invalid_request("tool_choice",
                           "this model's chat template has no tool-call syntax to force");
  }
  if (syntax == CallSyntax::kHarmony) {
    // The prompt ends with the call's header (harmony_prefill): the reply is its arguments.
    if (tools.size() != 1) return harmony_one_function();
    auto args = compile_schema(tools[0].parameters, tools[0].strict, "t0-", "tools[0].parameters");
    if (const ApiError* e = as_error(args)) return *e;
    return "root ::= t0-root\n" + std::get<std::string>(args);
  }
  std::string rules, names;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const Tool& t = tools[i];
    const std::string prefix = fmt::format("t{}-", i);
    const std::string param = fmt::format("tools[{}].parameters", i);
    std::string call;
    if (syntax == CallSyntax::kXml) {
      auto seq = xml_parameters(t, prefix, rules, param);
      if (const ApiError* e = as_error(seq)) return *e;
      call = gbnf_literal(t.name + ">\n") + std::get<std::string>(seq);
    } else if (syntax == CallSyntax::kPythonic) {
      auto args = python_arguments(t, prefix, rules, param);
      if (const ApiError* e = as_error(args)) return *e;
      call =
          gbnf_literal(t.name + "(") + " " + std::get<std::string>(args) + " " + gbnf_literal(")");
    } else {
      auto args = compile_schema(t.parameters, t.strict, prefix, param);
      if (const ApiError* e = as_error(args)) return *e;
      rules += std::get<std::string>(args);
      const char* key = syntax == CallSyntax::kLlama ? "parameters" : "arguments";
      call = gbnf_literal(json_content(t.name) + "\", \"" + key + "\": ") + " " + prefix + "root " +
             gbnf_literal("}");
    }
    rules += fmt::format("{}call ::= {}\n", prefix, call);
    names += (i == 0 ? "" : " | ") + prefix + "call";
  }
  std::string head, tail, sep;
  switch (syntax) {
    case CallSyntax::kXml:
      head = "<tool_call>\n<function=", tail = "</function>\n</tool_call>", sep = "\n";
      break;
    case CallSyntax::kHermes:
      head = "<tool_call>\n{\"name\": \"", tail = "\n</tool_call>", sep = "\n";
      break;
    default:
      head = "{\"name\": \"", tail = "", sep = "; ";
  }
  std::string out =
      syntax == CallSyntax::kPythonic
          // One Python list of calls between the markers.
          ? fmt::format(
                "calls ::= \"<|tool_call_start|>[\" call{} \"]<|tool_call_end|>\"\n"
                "call ::= ( {} )\n",
                req.parallel_tool_calls ? " ( \", \" call )*" : "", names)
          : fmt::format("calls ::= call{}\ncall ::= {} ( {} ) {}\n",
                        req.parallel_tool_calls ? " ( " + gbnf_literal(sep) + " call )*" : "",
                        gbnf_literal(head), names, tail.empty() ? "" : gbnf_literal(tail));
  if (strict_auto) {
    const char* marker = syntax == CallSyntax::kPythonic ? "<|tool_call_start|>" : "<tool_call>";
    out = "root ::= free calls?\n" + text_without_gbnf("free", marker) + out;
  } else {
    out = "root ::= calls\n" + out;
  }
  if (syntax == CallSyntax::kXml) {
    out += "xml-text ::= xml-free\n" + text_without_gbnf("xml-free", "</parameter>");
  }
  return out + rules;
}

}  // namespace recur::server
