#include "chat/normalize.h"

#include <fmt/format.h>

#include <utility>

namespace recur::chat {
namespace {

// Sentinels no template prints by itself; words without spaces survive |trim.
constexpr const char* kNeedleA = "RecurNeedleAlpha";
constexpr const char* kNeedleB = "RecurNeedleBravo";
constexpr const char* kQuestion = "RecurQuestionUser";
constexpr const char* kFollowUp = "RecurFollowUpUser";
constexpr const char* kToolName = "recur_probe_tool";
constexpr const char* kSecondTool = "recur_second_probe";
constexpr const char* kArgValue = "RecurArgumentValue";
// A role no template knows: a template that renders it treats every role generically.
constexpr const char* kUnknownRole = "recurunknownrole";

Message text_message(std::string role, std::string text) {
  Message m;
  m.role = std::move(role);
  m.content = std::move(text);
  return m;
}

Message parts_message(std::string role, std::vector<std::string> texts) {
  Message m;
  m.role = std::move(role);
  m.content_is_parts = true;
  for (auto& t : texts)
    m.content_parts.push_back(ContentPart{.type = "text", .text = std::move(t)});
  return m;
}

Message tool_call_message(std::optional<std::string> content) {
  Message m;
  m.role = "assistant";
  m.content = std::move(content);
  m.tool_calls.push_back(ToolCall{.id = "call_recur_probe",
                                  .name = kToolName,
                                  .arguments_json = fmt::format(R"({{"probe":"{}"}})", kArgValue)});
  return m;
}

Message tool_result(Message m) {
  m.tool_call_id = "call_recur_probe";
  return m;
}

bool has(const std::optional<std::string>& text, std::string_view needle) {
  return text && text->find(needle) != std::string::npos;
}

class Prober {
 public:
  explicit Prober(const ProbeRender& render) : render_(render) {}

  std::optional<std::string> run(std::vector<Message> msgs, bool object_arguments = true,
                                 std::string_view tools_json = "") const {
    TemplateCaps form = form_;
    form.object_arguments = object_arguments;
    return render_(msgs, form, tools_json);
  }
  // How later probes hand reasoning over.
  void use_thinking_key(bool on) { form_.thinking_key = on; }

  // `build(content)` makes a conversation around one message of `content`: two parts must show
  // both texts, and one part must render exactly as the same text given as a string.
  template <typename Build>
  bool typed_content(std::string_view role, Build build) const {
    auto two = run(build(parts_message(std::string(role), {kNeedleA, kNeedleB})));
    if (!has(two, kNeedleA) || !has(two, kNeedleB)) return false;
    auto one = run(build(parts_message(std::string(role), {kNeedleA})));
    auto plain = run(build(text_message(std::string(role), kNeedleA)));
    return one && plain && *one == *plain;
  }

  bool developer_role() const {
    auto dev = run({text_message("developer", kNeedleA), text_message("user", kQuestion)});
    if (!has(dev, kNeedleA)) return false;
    auto generic = run({text_message(kUnknownRole, kNeedleA), text_message("user", kQuestion)});
    if (!generic) return true;
    // The unknown role's rendering with the role's name put back: equal when developer was
    // rendered as any role would be.
    std::string as_dev = *generic;
    const std::string_view from = kUnknownRole, to = "developer";
    for (auto pos = as_dev.find(from); pos != std::string::npos;
         pos = as_dev.find(from, pos + to.size())) {
      as_dev.replace(pos, from.size(), to);
    }
    return as_dev != *dev;
  }

 private:
  const ProbeRender& render_;
  TemplateCaps form_;
};

}  // namespace

bool TemplateCaps::typed_content(std::string_view role) const {
  if (role == "system") return typed_content_system;
  if (role == "user") return typed_content_user;
  if (role == "assistant") return typed_content_assistant;
  if (role == "tool") return typed_content_tool;
  return false;
}

std::string TemplateCaps::to_string() const {
  return fmt::format(
      "system_role={:d} system_after_first={:d} developer_role={:d} typed_content={:d}{:d}{:d}{:d} "
      "null_content_with_tool_calls={:d} tool_calls={:d} object_arguments={:d} "
      "tool_responses={:d} consecutive_users={:d} consecutive_assistants={:d} thinking_key={:d} "
      "developer_after_first={:d} several_tool_calls={:d} tool_call_content_and_reasoning={:d} "
      "tools_without_description={:d}",
      system_role, system_after_first, developer_role, typed_content_system, typed_content_user,
      typed_content_assistant, typed_content_tool, null_content_with_tool_calls, tool_calls,
      object_arguments, tool_responses, consecutive_users, consecutive_assistants, thinking_key,
      developer_after_first, several_tool_calls, tool_call_content_and_reasoning,
      tools_without_description);
}

TemplateCaps detect_caps(const ProbeRender& render) {
  Prober p(render);
  TemplateCaps c;
  const Message user = text_message("user", kQuestion);
  const Message follow_up = text_message("user", kFollowUp);
  const Message reply = text_message("assistant", "RecurReplyAssistant");

  c.system_role = has(p.run({text_message("system", kNeedleA), user}), kNeedleA);
  c.system_after_first =
      c.system_role && has(p.run({text_message("system", "RecurSystemFirst"), user, reply,
                                  text_message("system", kNeedleB), follow_up}),
                           kNeedleB);
  c.developer_role = p.developer_role();
  auto both = [](const std::optional<std::string>& out) {
    return has(out, kNeedleA) && has(out, kNeedleB);
  };
  c.consecutive_users =
      both(p.run({text_message("user", kNeedleA), text_message("user", kNeedleB)}));
  c.consecutive_assistants = both(p.run(
      {user, text_message("assistant", kNeedleA), text_message("assistant", kNeedleB), follow_up}));

  // Past reasoning: under the key the template reads (shown for a final assistant turn).
  Message reasoned = text_message("assistant", "RecurReplyAssistant");
  reasoned.reasoning_content = kNeedleB;
  if (!has(p.run({user, reasoned}), kNeedleB)) {
    p.use_thinking_key(true);
    c.thinking_key = has(p.run({user, reasoned}), kNeedleB);
    p.use_thinking_key(c.thinking_key);
  }
  c.developer_after_first =
      !c.developer_role || has(p.run({text_message("system", "RecurSystemFirst"),
                                      text_message("developer", kNeedleB), user}),
                               kNeedleB);

  c.tool_calls = has(p.run({user, tool_call_message(""), follow_up}, true), kToolName);
  if (!c.tool_calls) {
    c.tool_calls = has(p.run({user, tool_call_message(""), follow_up}, false), kToolName);
    c.object_arguments = !c.tool_calls;
  }
  const bool args = c.object_arguments;
  if (c.tool_calls) {
    auto with_null = p.run({user, tool_call_message(std::nullopt), follow_up}, args);
    auto with_empty = p.run({user, tool_call_message(""), follow_up}, args);
    c.null_content_with_tool_calls = with_null && with_empty && *with_null == *with_empty;
    c.tool_responses =
        has(p.run({user, tool_call_message(""), tool_result(text_message("tool", kNeedleA))}, args),
            kNeedleA);
    Message two = tool_call_message("");
    two.tool_calls.push_back(
        ToolCall{.id = "call_recur_probe_b", .name = kSecondTool, .arguments_json = "{}"});
    c.several_tool_calls = has(p.run({user, two, follow_up}, args), kSecondTool);
    Message reasoned_call = tool_call_message(kNeedleA);
    reasoned_call.reasoning_content = kNeedleB;
    c.tool_call_content_and_reasoning = p.run({user, reasoned_call, follow_up}, args).has_value();
  }

  c.typed_content_system = c.system_role && p.typed_content("system", [&](Message m) {
    return std::vector<Message>{std::move(m), user};
  });
  c.typed_content_user =
      p.typed_content("user", [](Message m) { return std::vector<Message>{std::move(m)}; });
  c.typed_content_assistant = p.typed_content("assistant", [&](Message m) {
    return std::vector<Message>{user, std::move(m), follow_up};
  });
  c.typed_content_tool = c.tool_responses && p.typed_content("tool", [&](Message m) {
    return std::vector<Message>{user, tool_call_message(""), tool_result(std::move(m))};
  });
  // A tool declared without a description, and with an empty one.
  constexpr std::string_view kBare =
      R"([{"type":"function","function":{"name":"recur_probe_tool","parameters":{"type":"object",)"
      R"("properties":{}}}}])";
  constexpr std::string_view kDescribed =
      R"([{"type":"function","function":{"name":"recur_probe_tool","description":"",)"
      R"("parameters":{"type":"object","properties":{}}}}])";
  c.tools_without_description =
      p.run({user}, args, kBare).has_value() || !p.run({user}, args, kDescribed).has_value();
  // Bound to the probe's arguments form: the last renders use it.
  c.object_arguments = args;
  return c;
}

namespace {

std::string joined_parts(const Message& m) {
  std::string out;
  for (std::size_t i = 0; i < m.content_parts.size(); ++i) {
    if (i > 0) out += kPartSeparator;
    out += m.content_parts[i].text;
  }
  return out;
}

// The text of a message as normalisation joins it: the string, or the parts with kPartSeparator.
std::string plain_text(const Message& m) {
  return m.content_is_parts ? joined_parts(m) : m.content.value_or("");
}

void set_text(Message& m, std::string text) {
  m.content = std::move(text);
  m.content_is_parts = false;
  m.content_parts.clear();
}

void append_text(std::string& to, std::string_view text) {
  if (!to.empty() && !text.empty()) to += kMergeSeparator;
  to += text;
}

// Tool calls as JSON lines, for a template that cannot print them.
std::string calls_as_text(const std::vector<ToolCall>& calls) {
  std::string out;
  for (const auto& c : calls) {
    if (!out.empty()) out += '\n';
    out += fmt::format(R"({{"name": "{}", "arguments": {}}})", c.name, c.arguments_json);
  }
  return out;
}

// What each message needs on its own: its role, content form and tool fields.
Message rewrite_one(const Message& in, const TemplateCaps& caps) {
  Message m = in;
  if (m.role == "developer" && !caps.developer_role) m.role = "system";
  if (m.role == "tool" && !caps.tool_responses) {
    m.role = "user";
    m.tool_call_id.reset();
    m.name.reset();
  }
  if (m.role == "assistant" && !m.tool_calls.empty() && !caps.tool_calls) {
    std::string text = plain_text(m);
    if (!text.empty()) text += '\n';
    set_text(m, text + calls_as_text(m.tool_calls));
    m.tool_calls.clear();
  }
  if (m.content_is_parts && !caps.typed_content(m.role)) set_text(m, joined_parts(m));
  if (m.role == "assistant" && !m.tool_calls.empty() && !caps.tool_call_content_and_reasoning &&
      m.reasoning_content && !m.reasoning_content->empty() && !plain_text(m).empty()) {
    // The reasoning came first (gpt-oss writes its analysis, then a preamble, then the call).
    std::string r = *m.reasoning_content;
    append_text(r, plain_text(m));
    m.reasoning_content = std::move(r);
    set_text(m, "");
  }
  const bool keep_null =
      m.role == "assistant" && !m.tool_calls.empty() && caps.null_content_with_tool_calls;
  if (!m.content_is_parts && !m.content && !keep_null) m.content = "";
  return m;
}

bool is_instruction(const Message& m) { return m.role == "system" || m.role == "developer"; }

// Whether the template renders a system or developer message where it stands (first: it opens
// the conversation). A developer message is still one only where the template has the role.
bool stays(const Message& m, bool first, const TemplateCaps& caps) {
  if (m.role == "developer") return first || caps.developer_after_first;
  return caps.system_role && (first || caps.system_after_first);
}

// Places system (and developer) messages the template cannot take where they are: several leading
// ones become one, and those it cannot render (at all, or after the first message) go to the start
// of the next user message, or become a user message of their own when no user message follows.
std::vector<Message> place_systems(std::vector<Message> msgs, const TemplateCaps& caps) {
  std::vector<Message> out;
  std::size_t i = 0;
  if (!msgs.empty() && is_instruction(msgs[0]) && stays(msgs[0], true, caps)) {
    Message head = msgs[0];
    for (i = 1; i < msgs.size() && is_instruction(msgs[i]) && !stays(msgs[i], false, caps); ++i) {
      std::string text = plain_text(head);
      append_text(text, plain_text(msgs[i]));
      set_text(head, std::move(text));
    }
    out.push_back(std::move(head));
  }
  std::optional<std::string> pending;  // system text waiting for a user message
  for (; i < msgs.size(); ++i) {
    Message& m = msgs[i];
    if (is_instruction(m) && !stays(m, out.empty(), caps)) {
      std::string text = pending.value_or("");
      append_text(text, plain_text(m));
      pending = std::move(text);
      continue;
    }
    if (pending && m.role == "user") {
      std::string text = std::move(*pending);
      append_text(text, plain_text(m));
      set_text(m, std::move(text));
      pending.reset();
    } else if (pending) {
      out.push_back(text_message("user", std::move(*pending)));
      pending.reset();
    }
    out.push_back(std::move(m));
  }
  if (pending) out.push_back(text_message("user", std::move(*pending)));
  return out;
}

void merge_into(Message& into, const Message& next) {
  std::string text = plain_text(into);
  append_text(text, plain_text(next));
  const bool null_content =
      !into.content_is_parts && !into.content && !next.content_is_parts && !next.content;
  set_text(into, std::move(text));
  if (null_content) into.content.reset();
  if (next.reasoning_content) {
    std::string r = into.reasoning_content.value_or("");
    append_text(r, *next.reasoning_content);
    into.reasoning_content = std::move(r);
  }
  into.tool_calls.insert(into.tool_calls.end(), next.tool_calls.begin(), next.tool_calls.end());
}

// Runs of one role a template cannot render become one message.
std::vector<Message> merge_runs(std::vector<Message> msgs, const TemplateCaps& caps) {
  std::vector<Message> out;
  for (auto& m : msgs) {
    const bool merge = !out.empty() && out.back().role == m.role &&
                       ((m.role == "user" && !caps.consecutive_users) ||
                        (m.role == "assistant" && !caps.consecutive_assistants));
    if (merge) {
      merge_into(out.back(), m);
    } else {
      out.push_back(std::move(m));
    }
  }
  return out;
}

// A template that prints one call per assistant message (gpt-oss's names each tool result after
// the latest call): a message with several calls becomes one message per call, the first keeping
// the text and reasoning, each followed by the tool results that answer it (by tool_call_id, in
// order; results naming no call stay after the last).
std::vector<Message> split_calls(std::vector<Message> msgs) {
  std::vector<Message> out;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    Message& m = msgs[i];
    if (m.role != "assistant" || m.tool_calls.size() < 2) {
      out.push_back(std::move(m));
      continue;
    }
    std::size_t end = i + 1;
    while (end < msgs.size() && msgs[end].role == "tool") ++end;
    std::vector<bool> placed(end - i - 1, false);
    const std::vector<ToolCall> calls = std::move(m.tool_calls);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      Message one = k == 0 ? std::move(m) : Message{.role = "assistant", .content = ""};
      one.tool_calls = {calls[k]};
      out.push_back(std::move(one));
      for (std::size_t r = i + 1; r < end; ++r) {
        if (!placed[r - i - 1] && msgs[r].tool_call_id == calls[k].id) {
          placed[r - i - 1] = true;
          out.push_back(std::move(msgs[r]));
        }
      }
    }
    for (std::size_t r = i + 1; r < end; ++r) {
      if (!placed[r - i - 1]) out.push_back(std::move(msgs[r]));
    }
    i = end - 1;
  }
  return out;
}

}  // namespace

std::vector<Message> normalize_messages(std::span<const Message> messages,
                                        const TemplateCaps& caps) {
  std::vector<Message> out;
  out.reserve(messages.size());
  for (const auto& m : messages) out.push_back(rewrite_one(m, caps));
  out = merge_runs(place_systems(std::move(out), caps), caps);
  if (caps.tool_calls && !caps.several_tool_calls) out = split_calls(std::move(out));
  return out;
}

}  // namespace recur::chat
