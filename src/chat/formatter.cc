#include "chat/formatter.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "chat/harmony.h"
#include "util/hash.h"

namespace recur::chat {
namespace {

// A message as apply_chat_template gets it. form: how the template takes tool-call arguments and
// past reasoning (TemplateCaps::object_arguments, thinking_key).
tmpl::Value message_value(const Message& m, const TemplateCaps& form) {
  tmpl::Value v = tmpl::Value::dict();
  auto& d = v.as_dict();
  d.set("role", tmpl::Value(m.role));
  if (m.content_is_parts) {
    tmpl::Value parts = tmpl::Value::list();
    for (const auto& p : m.content_parts) {
      tmpl::Value part = tmpl::Value::dict();
      part.as_dict().set("type", tmpl::Value(p.type));
      part.as_dict().set("text", tmpl::Value(p.text));
      parts.as_list().push_back(part);
    }
    d.set("content", parts);
  } else if (m.content) {
    d.set("content", tmpl::Value(*m.content));
  } else {
    d.set("content", tmpl::Value::none());
  }
  if (m.reasoning_content) {
    d.set(form.thinking_key ? "thinking" : "reasoning_content", tmpl::Value(*m.reasoning_content));
  }
  if (!m.tool_calls.empty()) {
    tmpl::Value calls = tmpl::Value::list();
    for (const auto& c : m.tool_calls) {
      // Templates iterate arguments|items (Qwen3.5) or print them (Qwen3): an object when the
      // JSON parses (as vLLM passes them), else the text as given; the text for a template that
      // only prints strings.
      auto args = tmpl::value_from_json(c.arguments_json);
      const bool as_object = form.object_arguments && args.is_ok() && args->is_dict();
      tmpl::Value fn = tmpl::Value::dict();
      fn.as_dict().set("name", tmpl::Value(c.name));
      fn.as_dict().set("arguments", as_object ? *args : tmpl::Value(c.arguments_json));
      tmpl::Value call = tmpl::Value::dict();
      call.as_dict().set("id", tmpl::Value(c.id));
      call.as_dict().set("type", tmpl::Value("function"));
      call.as_dict().set("function", fn);
      calls.as_list().push_back(call);
    }
    d.set("tool_calls", calls);
  }
  if (m.tool_call_id) d.set("tool_call_id", tmpl::Value(*m.tool_call_id));
  if (m.name) d.set("name", tmpl::Value(*m.name));
  return v;
}

// Tools handed to a template that needs every tool to have a description: an empty one where the
// client gave none.
void give_descriptions(tmpl::Value& tools) {
  if (!tools.is_list()) return;
  for (tmpl::Value& t : tools.as_list()) {
    if (!t.is_dict()) continue;
    tmpl::Value* fn = t.as_dict().find("function");
    tmpl::Value& target = fn != nullptr && fn->is_dict() ? *fn : t;
    if (target.as_dict().find("description") == nullptr) {
      target.as_dict().set("description", tmpl::Value(""));
    }
  }
}

// The context apply_chat_template builds: messages (already normalised), tools, the flag, the
// tokenizer's special tokens and the kwargs.
Result<tmpl::Value> build_context(std::span<const Message> messages, const ChatInputs& in,
                                  bool add_generation_prompt,
                                  const tokenizer::SpecialTokens& special,
                                  const TemplateCaps& form) {
  tmpl::Value ctx = tmpl::Value::dict();
  auto& d = ctx.as_dict();
  tmpl::Value msgs = tmpl::Value::list();
  for (const auto& m : messages) msgs.as_list().push_back(message_value(m, form));
  d.set("messages", msgs);
  if (!in.tools_json.empty()) {
    auto tools = tmpl::value_from_json(in.tools_json);
    if (!tools) return tools.status().with_context("tools");
    if (!form.tools_without_description) give_descriptions(*tools);
    d.set("tools", *tools);
  }
  d.set("add_generation_prompt", tmpl::Value(add_generation_prompt));
  // As apply_chat_template: the special tokens the tokenizer defines, and only those.
  if (special.bos_token) d.set("bos_token", tmpl::Value(*special.bos_token));
  if (special.eos_token) d.set("eos_token", tmpl::Value(*special.eos_token));
  if (special.pad_token) d.set("pad_token", tmpl::Value(*special.pad_token));
  if (special.unk_token) d.set("unk_token", tmpl::Value(*special.unk_token));
  if (!in.kwargs_json.empty()) {
    auto kwargs = tmpl::value_from_json(in.kwargs_json);
    if (!kwargs) return kwargs.status().with_context("chat_template_kwargs");
    if (!kwargs->is_dict()) {
      return Error(StatusCode::kInvalidArgument, "chat_template_kwargs must be an object");
    }
    for (const auto& [k, v] : kwargs->as_dict().items) {
      if (k.is_string()) d.set(k.as_string(), v);
    }
  }
  return ctx;
}

}  // namespace

std::int64_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<std::int64_t>(i);
}

ChatFormatter::ChatFormatter(const tokenizer::Tokenizer& tok, std::string source,
                             tmpl::Template parsed)
    : tok_(&tok), source_(std::move(source)), template_(std::move(parsed)) {
  has_reasoning_ = source_.find("<think>") != std::string::npos;
  harmony_ = is_harmony_template(source_) &&
             std::all_of(std::begin(kHarmonyMarkers), std::end(kHarmonyMarkers),
                         [&](std::string_view m) { return tok.token_id(m).has_value(); });
  caps_ = detect_caps([this](std::span<const Message> msgs, const TemplateCaps& form,
                             std::string_view tools_json) -> std::optional<std::string> {
    auto ctx = build_context(msgs, ChatInputs{.tools_json = tools_json}, false,
                             tok_->special_tokens(), form);
    if (!ctx) return std::nullopt;
    auto text = template_.render(*ctx);
    if (!text) return std::nullopt;
    return std::move(text).value();
  });
}

Result<ChatFormatter> ChatFormatter::create(const tokenizer::Tokenizer& tok) {
  if (!tok.chat_template()) {
    return Error(StatusCode::kNotFound,
                 "the checkpoint has no chat template (tokenizer_config.json chat_template or "
                 "chat_template.jinja)");
  }
  return create(tok, *tok.chat_template());
}

Result<ChatFormatter> ChatFormatter::create(const tokenizer::Tokenizer& tok, std::string source) {
  auto parsed = tmpl::Template::parse(source);
  if (!parsed) return parsed.status().with_context("chat template");
  return ChatFormatter(tok, std::move(source), std::move(parsed).value());
}

Result<std::string> ChatFormatter::render_normalized(std::span<const Message> messages,
                                                     const ChatInputs& in,
                                                     bool add_generation_prompt) const {
  RECUR_ASSIGN_OR_RETURN(
      auto ctx, build_context(messages, in, add_generation_prompt, tok_->special_tokens(), caps_));
  auto text = template_.render(ctx);
  if (!text) return text.status().with_context("chat template");
  return text;
}

Result<std::string> ChatFormatter::render(const ChatInputs& in, bool add_generation_prompt) const {
  return render_normalized(normalize_messages(in.messages, caps_), in, add_generation_prompt);
}

namespace {

std::string_view strip(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

Result<std::string> ChatFormatter::continuation(std::span<const Message> messages,
                                                const ChatInputs& in) const {
  if (messages.empty() || messages.back().role != "assistant") {
    return Error(StatusCode::kInvalidArgument,
                 "continuing the final message needs a final assistant message");
  }
  // As Hugging Face's continue_final_message: the rendering without a generation prompt, cut
  // right after the last occurrence of the final message's (stripped) text.
  const Message& last = messages.back();
  std::string_view needle;
  if (!last.content_is_parts && last.content) needle = *last.content;
  if (last.content_is_parts && !last.content_parts.empty()) needle = last.content_parts.back().text;
  needle = strip(needle);
  if (needle.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 "the final assistant message has no text to continue");
  }
  RECUR_ASSIGN_OR_RETURN(std::string text, render_normalized(messages, in, false));
  const auto pos = text.rfind(needle);
  if (pos == std::string::npos) {
    return Error(StatusCode::kInvalidArgument,
                 "the chat template does not print the final assistant message's text, so it "
                 "cannot be continued");
  }
  text.resize(pos + needle.size());
  return text;
}

Result<Prompt> ChatFormatter::build_prompt(const ChatInputs& in) const {
  using Clock = std::chrono::steady_clock;
  Prompt p;
  const Clock::time_point t0 = Clock::now();
  const std::vector<Message> msgs = normalize_messages(in.messages, caps_);
  if (in.continue_final_message) {
    RECUR_ASSIGN_OR_RETURN(p.text, continuation(msgs, in));
  } else {
    RECUR_ASSIGN_OR_RETURN(p.text, render_normalized(msgs, in, in.add_generation_prompt));
  }
  RECUR_ASSIGN_OR_RETURN(std::string history, render_normalized(msgs, in, false));
  // The leading system messages followed by a placeholder user message, twice with placeholders
  // that share nothing: where the two renderings part is where a conversation's own messages
  // begin, whatever they say (a template may refuse a conversation without a user message, and
  // Gemma's puts the system text inside the first user turn). Conversations with the same system
  // prompt share every token before it.
  std::size_t n_system = 0;
  while (n_system < msgs.size() &&
         (msgs[n_system].role == "system" || msgs[n_system].role == "developer")) {
    ++n_system;
  }
  std::optional<std::string> head_a, head_b;
  if (n_system > 0 && n_system < msgs.size()) {
    auto with_user = [&](const char* text) -> std::optional<std::string> {
      std::vector<Message> cut(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(n_system));
      cut.push_back(Message{.role = "user", .content = text});
      auto rendered = render_normalized(cut, in, false);
      if (!rendered) return std::nullopt;
      return std::move(rendered).value();
    };
    head_a = with_user("Alpha placeholder 1");
    head_b = with_user("? 2 zeta");
  }
  const Clock::time_point t1 = Clock::now();
  const tokenizer::EncodeOptions opts{.parse_special = true, .add_special_tokens = false};
  p.tokens = tok_->encode(p.text, opts);
  std::vector<TokenId> h = tok_->encode(history, opts);
  p.history_boundary = common_prefix(p.tokens, h);
  if (head_a && head_b) {
    const std::vector<TokenId> a = tok_->encode(*head_a, opts);
    p.shared_boundary = std::min({common_prefix(a, tok_->encode(*head_b, opts)),
                                  common_prefix(p.tokens, a), p.history_boundary});
  }
  // Prefixes shared across conversations end by the first user message: a client's marks on
  // later messages (Claude Code marks the newest each turn) are its own conversation's, which the
  // boundary and warm-up snapshots already keep, and each point would copy the whole state again.
  std::size_t first_user = 0;
  while (first_user < in.messages.size() && in.messages[first_user].role != "user") ++first_user;
  for (const CacheBreakpoint& bp : in.cache_breakpoints) {
    if (bp.message >= in.messages.size() || bp.message > first_user) continue;
    const std::int64_t at = std::min(breakpoint_position(in, bp, p.tokens), p.history_boundary);
    if (at > 0 && (p.cache_points.empty() || at > p.cache_points.back())) {
      p.cache_points.push_back(at);
    }
  }
  p.render_s = std::chrono::duration<double>(t1 - t0).count();
  p.tokenize_s = std::chrono::duration<double>(Clock::now() - t1).count();
  if (has_reasoning_) {
    auto open = p.text.rfind("<think>");
    auto close = p.text.rfind("</think>");
    p.starts_in_reasoning =
        open != std::string::npos && (close == std::string::npos || close < open);
  }
  return p;
}

std::optional<std::pair<std::vector<TokenId>, std::vector<TokenId>>> ChatFormatter::render_two_ways(
    const ChatInputs& in, bool add_generation_prompt,
    const std::function<std::vector<Message>(const char*)>& with) const {
  auto render = [&](const char* placeholder) -> std::optional<std::vector<TokenId>> {
    auto text =
        render_normalized(normalize_messages(with(placeholder), caps_), in, add_generation_prompt);
    if (!text) return std::nullopt;
    return tok_->encode(*text, {.parse_special = true, .add_special_tokens = false});
  };
  // Placeholders that share no first character or character class.
  auto a = render("Alpha placeholder 1");
  auto b = render("? 2 zeta");
  if (!a || !b) return std::nullopt;
  return std::make_pair(std::move(*a), std::move(*b));
}

std::int64_t ChatFormatter::breakpoint_position(const ChatInputs& in, const CacheBreakpoint& at,
                                                std::span<const TokenId> prompt) const {
  // The cut is made on the client's messages and normalised like the whole conversation (a
  // breakpoint counts the messages as sent; normalising may merge some), so it renders as the
  // prompt does up to the breakpoint.
  const std::string kept = in.messages[at.message].text().substr(0, at.content_bytes);
  auto two = render_two_ways(in, false, [&](const char* text) {
    std::vector<Message> cut(in.messages.begin(),
                             in.messages.begin() + static_cast<std::ptrdiff_t>(at.message));
    Message next = in.messages[at.message];
    next.content = kept + text;
    next.content_parts.clear();
    next.content_is_parts = false;
    next.reasoning_content.reset();
    next.tool_calls.clear();
    cut.push_back(std::move(next));
    return cut;
  });
  if (!two) return 0;
  return std::min(common_prefix(two->first, two->second), common_prefix(two->first, prompt));
}

std::vector<TokenId> ChatFormatter::next_turn_prefix(const ChatInputs& in,
                                                     const Message& reply) const {
  // After tool calls the next turn is a tool result; otherwise a user message.
  const bool tool_turn = !reply.tool_calls.empty();
  auto two = render_two_ways(in, true, [&](const char* placeholder) {
    std::vector<Message> msgs(in.messages.begin(), in.messages.end());
    msgs.push_back(reply);
    Message next;
    next.role = tool_turn ? "tool" : "user";
    next.content = placeholder;
    if (tool_turn) next.tool_call_id = reply.tool_calls.front().id;
    msgs.push_back(std::move(next));
    return msgs;
  });
  if (!two) return {};
  two->first.resize(static_cast<std::size_t>(common_prefix(two->first, two->second)));
  return std::move(two->first);
}

std::uint64_t ChatFormatter::signature(const ChatInputs& in) const {
  Hasher h(0x63686174);  // "chat"
  h.update(source_).update("\x1f").update(in.kwargs_json).update("\x1f").update(in.tools_json);
  return h.digest();
}

}  // namespace recur::chat
