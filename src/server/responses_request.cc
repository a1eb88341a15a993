#include "server/responses_request.h"

#include "server/json_fields.h"

namespace recur::server {
namespace {

// Key order is kept: tool definitions and arguments re-serialize as the client wrote them.
using json = nlohmann::ordered_json;

constexpr std::string_view kPartSeparator = "\n";  // between text parts of one message

// A message's content: a string, or an array of input_text / output_text parts joined.
std::optional<ApiError> read_content(const json& c, const std::string& at, std::string& out) {
  if (c.is_string()) {
    out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array()) return wrong_type(at, "a string or an array of content parts", c);
  out.clear();
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string pat = fmt::format("{}[{}]", at, i);
    if (!c[i].is_object()) return wrong_type(pat, "an object", c[i]);
    std::string type, text;
    RECUR_TRY_FIELD(read_string(c[i], "type", type, pat + "."));
    if (type == "refusal") {
      RECUR_TRY_FIELD(read_string(c[i], "refusal", text, pat + "."));
    } else if (type == "input_text" || type == "output_text" || type == "text") {
      RECUR_TRY_FIELD(read_string(c[i], "text", text, pat + "."));
    } else {
      return unsupported_part(pat + ".type", type, "input_text, output_text and refusal");
    }
    if (i > 0) out += kPartSeparator;
    out += text;
  }
  return std::nullopt;
}

// Turns items into messages. An assistant turn arrives as a reasoning item, a message and
// function calls, in that order; they become one assistant message.
class ItemReader {
 public:
  ItemReader(std::vector<chat::Message>& out, const ItemResolver& resolve)
      : out_(out), resolve_(resolve) {}

  std::optional<ApiError> read(const json& item, const std::string& at) {
    if (!item.is_object()) return wrong_type(at, "an object", item);
    // An item given only by its id is a reference (the API lets `type` be left out there).
    std::string type = item.contains("id") && !item.contains("role") && !item.contains("content")
                           ? "item_reference"
                           : "message";
    RECUR_TRY_FIELD(read_string(item, "type", type, at + "."));
    if (type == "item_reference") return reference(item, at);
    if (type == "message") return message(item, at);
    if (type == "function_call") return function_call(item, at);
    if (type == "function_call_output") return function_output(item, at);
    if (type == "reasoning") return reasoning(item, at);
    return invalid_request(at + ".type",
                           fmt::format("input item type '{}' is not supported (message, "
                                       "function_call, function_call_output, reasoning and "
                                       "item_reference are)",
                                       type));
  }

  void flush() {
    if (pending_) out_.push_back(std::move(*pending_));
    pending_.reset();
    pending_has_text_ = false;
  }

 private:
  std::optional<ApiError> message(const json& item, const std::string& at) {
    std::string role, text;
    RECUR_TRY_FIELD(read_string(item, "role", role, at + "."));
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
      return invalid_request(at + ".role",
                             fmt::format("'{}.role' must be user, assistant, system or "
                                         "developer, got '{}'",
                                         at, role));
    }
    auto c = item.find("content");
    if (c == item.end() || c->is_null()) {
      return invalid_request(at + ".content", fmt::format("'{}.content' is required", at));
    }
    RECUR_TRY_FIELD(read_content(*c, at + ".content", text));
    if (role != "assistant") {
      flush();
      out_.push_back(chat::Message{.role = role, .content = std::move(text)});
      return std::nullopt;
    }
    if (pending_ && (pending_has_text_ || !pending_->tool_calls.empty())) flush();
    if (!pending_) pending_ = chat::Message{.role = "assistant"};
    pending_->content = std::move(text);
    pending_has_text_ = true;
    return std::nullopt;
  }

  std::optional<ApiError> function_call(const json& item, const std::string& at) {
    chat::ToolCall call;
    RECUR_TRY_FIELD(read_string(item, "call_id", call.id, at + "."));
    RECUR_TRY_FIELD(read_string(item, "name", call.name, at + "."));
    if (call.name.empty()) return invalid_request(at + ".name", "a function_call needs a name");
    std::string ns;
    RECUR_TRY_FIELD(read_string(item, "namespace", ns, at + "."));
    // Echoed as the model generated it: under the flat name the tool was offered by.
    if (!ns.empty()) call.name = flat_tool_name(ns, call.name);
    call.arguments_json = "{}";
    RECUR_TRY_FIELD(read_string(item, "arguments", call.arguments_json, at + "."));
    if (!pending_) pending_ = chat::Message{.role = "assistant", .content = ""};
    pending_->tool_calls.push_back(std::move(call));
    return std::nullopt;
  }

  std::optional<ApiError> function_output(const json& item, const std::string& at) {
    flush();
    chat::Message m{.role = "tool"};
    std::string id, output;
    RECUR_TRY_FIELD(read_string(item, "call_id", id, at + "."));
    if (id.empty())
      return invalid_request(at + ".call_id", "a function_call_output needs a call_id");
    if (auto o = item.find("output"); o != item.end() && !o->is_null()) {
      RECUR_TRY_FIELD(read_content(*o, at + ".output", output));
    }
    m.tool_call_id = id;
    m.content = std::move(output);
    out_.push_back(std::move(m));
    return std::nullopt;
  }

  // The reasoning's text: its `content` (reasoning_text parts, what recur returns), else its
  // `summary` (summary_text parts, what OpenAI's models return), joined with a newline.
  std::optional<ApiError> reasoning(const json& item, const std::string& at) {
    flush();
    std::string text, summary;
    RECUR_TRY_FIELD(read_texts(item, "content", at, "", text));
    RECUR_TRY_FIELD(read_texts(item, "summary", at, kPartSeparator, summary));
    pending_ = chat::Message{
        .role = "assistant", .content = "", .reasoning_content = text.empty() ? summary : text};
    return std::nullopt;
  }

  static std::optional<ApiError> read_texts(const json& item, const char* key,
                                            const std::string& at, std::string_view separator,
                                            std::string& out) {
    auto c = item.find(key);
    if (c == item.end() || c->is_null()) return std::nullopt;
    const std::string field = fmt::format("{}.{}", at, key);
    if (!c->is_array()) return wrong_type(field, "an array", *c);
    for (size_t i = 0; i < c->size(); ++i) {
      const std::string pat = fmt::format("{}[{}]", field, i);
      if (!(*c)[i].is_object()) return wrong_type(pat, "an object", (*c)[i]);
      std::string t;
      RECUR_TRY_FIELD(read_string((*c)[i], "text", t, pat + "."));
      if (i > 0) out += separator;
      out += t;
    }
    return std::nullopt;
  }

  // An earlier response's output item, read as if the client had sent it whole (the Vercel AI
  // SDK sends its earlier replies this way).
  std::optional<ApiError> reference(const json& item, const std::string& at) {
    std::string id;
    RECUR_TRY_FIELD(read_string(item, "id", id, at + "."));
    if (id.empty()) return invalid_request(at + ".id", "an item_reference needs an id");
    if (!resolve_) {
      return invalid_request(at + ".type", "item_reference items are not supported here");
    }
    std::optional<std::string> text = resolve_(id);
    if (!text) {
      ApiError e =
          not_found(fmt::format("input item '{}' ({}.id) not found: not an output item "
                                "of a stored response of this API key (unknown, "
                                "stored with store: false, deleted, expired or evicted)",
                                id, at));
      e.param = at + ".id";
      return e;
    }
    const json resolved = json::parse(*text, nullptr, false);
    if (!resolved.is_object() || resolved.value("type", "") == "item_reference") {
      return internal_error(fmt::format("stored item '{}' is unreadable", id));
    }
    return read(resolved, at);
  }

  std::vector<chat::Message>& out_;
  const ItemResolver& resolve_;
  std::optional<chat::Message> pending_;  // the assistant turn being assembled
  bool pending_has_text_ = false;
};

std::optional<ApiError> parse_input(const json& body, const RequestLimits& limits,
                                    const ItemResolver& resolve, std::vector<chat::Message>& out) {
  auto in = body.find("input");
  if (in == body.end() || in->is_null()) return invalid_request("input", "'input' is required");
  if (in->is_string()) {
    out.push_back(chat::Message{.role = "user", .content = in->get<std::string>()});
    return std::nullopt;
  }
  if (!in->is_array()) return wrong_type("input", "a string or an array of items", *in);
  if (in->size() > limits.max_messages) {
    return invalid_request(
        "input",
        fmt::format("at most {} input items are allowed, got {}", limits.max_messages, in->size()),
        "limit_exceeded");
  }
  ItemReader reader(out, resolve);
  for (size_t i = 0; i < in->size(); ++i) {
    RECUR_TRY_FIELD(reader.read((*in)[i], fmt::format("input[{}]", i)));
  }
  reader.flush();
  return std::nullopt;
}

// A Responses function tool in the chat template's shape, under `flat_name` when it belongs to
// a namespace.
std::optional<ApiError> function_tool(const json& tool, const std::string& at,
                                      const std::string& ns, json& out, ResponsesRequest& r) {
  std::string name, description;
  RECUR_TRY_FIELD(read_string(tool, "name", name, at + "."));
  if (name.empty()) return invalid_request(at + ".name", fmt::format("'{}.name' is required", at));
  RECUR_TRY_FIELD(read_string(tool, "description", description, at + "."));
  std::string offered = name;
  if (!ns.empty()) {
    offered = flat_tool_name(ns, name);
    r.namespaced.push_back({.flat = offered, .ns = ns, .name = name});
  }
  json fn = {{"name", offered}};
  if (!description.empty()) fn["description"] = description;
  if (auto p = tool.find("parameters"); p != tool.end() && !p->is_null()) {
    if (!p->is_object()) return wrong_type(at + ".parameters", "an object", *p);
    fn["parameters"] = *p;
  }
  // strict: the calls' arguments match the schema exactly (service_constraint); only an explicit
  // true, so a client that leaves it out gets the lenient grammar of a forced call.
  bool strict = false;
  RECUR_TRY_FIELD(read_bool(tool, "strict", strict, at + "."));
  if (strict) fn["strict"] = true;
  out.push_back(json{{"type", "function"}, {"function", std::move(fn)}});
  return std::nullopt;
}

// What a tool recur cannot run is called in the header and log: its type, and for a remote MCP
// server its label.
std::string unsupported_label(const json& tool, const std::string& type) {
  if (type == "mcp" && tool.contains("server_label") && tool["server_label"].is_string()) {
    return "mcp:" + tool["server_label"].get<std::string>();
  }
  return type;
}

std::optional<ApiError> parse_tools(const json& body, const RequestLimits& limits,
                                    ResponsesRequest& r) {
  auto t = body.find("tools");
  if (t == body.end() || t->is_null()) return std::nullopt;
  if (!t->is_array()) return wrong_type("tools", "an array", *t);
  json tools = json::array();
  for (size_t i = 0; i < t->size(); ++i) {
    const json& tool = (*t)[i];
    const std::string at = fmt::format("tools[{}]", i);
    if (!tool.is_object()) return wrong_type(at, "an object", tool);
    std::string type;
    RECUR_TRY_FIELD(read_string(tool, "type", type, at + "."));
    if (type == "function") {
      RECUR_TRY_FIELD(function_tool(tool, at, "", tools, r));
    } else if (type == "namespace") {
      std::string ns;
      RECUR_TRY_FIELD(read_string(tool, "name", ns, at + "."));
      if (ns.empty()) return invalid_request(at + ".name", "a namespace tool needs a name");
      auto inner = tool.find("tools");
      if (inner == tool.end() || !inner->is_array()) {
        return invalid_request(at + ".tools", fmt::format("'{}.tools' must be an array", at));
      }
      for (size_t j = 0; j < inner->size(); ++j) {
        const json& f = (*inner)[j];
        const std::string fat = fmt::format("{}.tools[{}]", at, j);
        if (!f.is_object()) return wrong_type(fat, "an object", f);
        std::string ftype = "function";
        RECUR_TRY_FIELD(read_string(f, "type", ftype, fat + "."));
        if (ftype == "function") {
          RECUR_TRY_FIELD(function_tool(f, fat, ns, tools, r));
        } else {
          RECUR_TRY_FIELD(leave_out_tool(limits.unsupported_tools, fat + ".type", ns + "." + ftype,
                                         r.chat.dropped_tools));
        }
      }
    } else {
      RECUR_TRY_FIELD(leave_out_tool(limits.unsupported_tools, at + ".type",
                                     unsupported_label(tool, type), r.chat.dropped_tools));
    }
  }
  r.tools_json = dump_json(*t);
  if (!tools.empty()) r.chat.tools_json = dump_json(tools);
  if (r.tools_json.size() > limits.max_tools_json_bytes) {
    return invalid_request(
        "tools",
        fmt::format("tool definitions may take at most {} bytes", limits.max_tools_json_bytes),
        "limit_exceeded");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_tool_choice(const json& body, ResponsesRequest& r) {
  auto tc = body.find("tool_choice");
  if (tc == body.end() || tc->is_null()) return std::nullopt;
  if (tc->is_string()) {
    std::string c = tc->get<std::string>();
    if (c != "auto" && c != "none" && c != "required") {
      return invalid_request("tool_choice",
                             "'tool_choice' must be auto, none, required or "
                             "{\"type\": \"function\", \"name\": ...}");
    }
    r.chat.tool_choice_json = dump_json(*tc);
  } else if (tc->is_object()) {
    std::string type, name;
    RECUR_TRY_FIELD(read_string(*tc, "type", type, "tool_choice."));
    RECUR_TRY_FIELD(read_string(*tc, "name", name, "tool_choice."));
    if (type != "function" || name.empty()) {
      return invalid_request("tool_choice",
                             "'tool_choice' as an object must be {\"type\": \"function\", "
                             "\"name\": ...}");
    }
    r.chat.tool_choice_json = dump_json(json{{"type", "function"}, {"function", {{"name", name}}}});
  } else {
    return wrong_type("tool_choice", "a string or an object", *tc);
  }
  r.tool_choice_json = dump_json(*tc);
  return std::nullopt;
}

// reasoning.effort (enable_thinking and reasoning_effort: read_reasoning_effort) and the
// chat_template_kwargs extension become the template's variables; an explicit kwarg wins.
std::optional<ApiError> parse_template_kwargs(const json& body, ChatRequest& r) {
  json kwargs = json::object();
  if (auto re = body.find("reasoning"); re != body.end() && !re->is_null()) {
    if (!re->is_object()) return wrong_type("reasoning", "an object", *re);
    RECUR_TRY_FIELD(read_reasoning_effort(*re, "effort", kwargs, "reasoning."));
  }
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) return wrong_type("chat_template_kwargs", "an object", *k);
    for (const auto& [name, value] : k->items()) kwargs[name] = value;
  }
  if (!kwargs.empty()) r.chat_template_kwargs_json = dump_json(kwargs);
  return std::nullopt;
}

// Fields recur cannot honour are refused by name rather than silently ignored.
std::optional<ApiError> refuse_unsupported(const json& body) {
  if (auto b = body.find("background"); b != body.end() && b->is_boolean() && b->get<bool>()) {
    return invalid_request("background", "background responses are not supported");
  }
  if (auto c = body.find("conversation"); c != body.end() && !c->is_null()) {
    return invalid_request("conversation",
                           "conversations are not supported; use previous_response_id");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_generation(const json& body, const RequestLimits& limits,
                                         ResponsesRequest& r) {
  GenerationFields& g = r.chat.gen;
  RECUR_TRY_FIELD(read_string(body, "model", g.model));
  auto& s = g.sampling;
  RECUR_TRY_FIELD(read_number(body, "temperature", s.temperature, 0.0, 2.0));
  RECUR_TRY_FIELD(read_number(body, "top_p", s.top_p, 0.0, 1.0));
  if (body.contains("top_p") && body["top_p"].is_number() && s.top_p <= 0.0f) {
    return invalid_request("top_p", "'top_p' must be greater than 0");
  }
  std::optional<std::int64_t> top_k, seed;
  RECUR_TRY_FIELD(read_int(body, "top_k", top_k, -1, 1 << 30));
  if (top_k) s.top_k = *top_k < 0 ? 0 : static_cast<int>(*top_k);
  RECUR_TRY_FIELD(read_int(body, "seed", seed, INT64_MIN / 2, INT64_MAX / 2));
  if (seed) {
    s.seed = static_cast<std::uint64_t>(*seed);
    g.seed_given = true;
  }
  RECUR_TRY_FIELD(read_int(body, "max_output_tokens", r.max_output_tokens, 1, limits.max_tokens_cap,
                           "max_tokens_limit"));
  g.max_tokens = r.max_output_tokens;
  RECUR_TRY_FIELD(read_bool(body, "stream", g.stream));
  RECUR_TRY_FIELD(read_bool(body, "store", r.store));
  RECUR_TRY_FIELD(read_bool(body, "parallel_tool_calls", r.chat.parallel_tool_calls));
  RECUR_TRY_FIELD(read_string(body, "previous_response_id", r.previous_response_id));
  std::string instructions;
  if (body.contains("instructions") && !body["instructions"].is_null()) {
    RECUR_TRY_FIELD(read_string(body, "instructions", instructions));
    r.instructions = std::move(instructions);
  }
  if (auto md = body.find("metadata"); md != body.end() && !md->is_null()) {
    if (!md->is_object()) return wrong_type("metadata", "an object", *md);
    r.metadata_json = dump_json(*md);
  }
  RECUR_TRY_FIELD(read_string(body, "prompt_cache_key", g.prompt_cache_key));
  RECUR_TRY_FIELD(read_string(body, "user", g.user));
  RECUR_TRY_FIELD(read_string(body, "cache_salt", g.cache_salt));
  return std::nullopt;
}

}  // namespace

std::string flat_tool_name(std::string_view ns, std::string_view name) {
  std::string flat(ns);
  if (!flat.ends_with('_')) flat += "__";
  flat += name;
  return flat;
}

Parsed<ResponsesRequest> parse_responses_request(std::string_view text, const RequestLimits& limits,
                                                 const ItemResolver& resolve_item) {
  auto parsed = parse_json_body<json>(text, limits.max_json_depth);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& body = std::get<json>(parsed);
  ResponsesRequest req;
  if (auto e = refuse_unsupported(body)) return *e;
  if (auto e = parse_generation(body, limits, req)) return *e;
  if (auto e = parse_input(body, limits, resolve_item, req.chat.messages)) return *e;
  if (req.store) req.input_json = body["input"].dump();
  if (auto e = parse_tools(body, limits, req)) return *e;
  if (auto e = parse_tool_choice(body, req)) return *e;
  if (auto e = parse_template_kwargs(body, req.chat)) return *e;
  if (auto e = parse_responses_output_format(body, req.chat.output_format)) return *e;
  return req;
}

}  // namespace recur::server
