// recur template: renders a chat (a messages JSON file) through a checkpoint's chat template the
// way Hugging Face's apply_chat_template does, prints the prompt on stdout and its token count on
// stderr. What people reach for when a prompt looks wrong.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/commands.h"
#include "app/model_source.h"
#include "app/settings.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace recur::app {
namespace {

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(StatusCode::kNotFound, "cannot open {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The template context apply_chat_template builds: messages, tools, add_generation_prompt, the
// special tokens, then the kwargs (which may override any of them).
Result<tmpl::Value> build_context(const tokenizer::Tokenizer& tok,
                                  const TemplateSettings& settings) {
  RECUR_ASSIGN_OR_RETURN(std::string text, read_text_file(settings.messages_path));
  auto chat_r = tmpl::value_from_json(text);
  if (!chat_r.is_ok()) return chat_r.status().with_context(settings.messages_path);
  tmpl::Value chat = *chat_r;
  tmpl::Value context = tmpl::Value::dict();
  auto& ctx = context.as_dict();
  if (chat.is_list()) {
    ctx.set("messages", chat);
  } else if (chat.is_dict() && chat.as_dict().find("messages")) {
    ctx.set("messages", *chat.as_dict().find("messages"));
    if (const tmpl::Value* tools = chat.as_dict().find("tools")) ctx.set("tools", *tools);
  } else {
    return Error(StatusCode::kInvalidArgument,
                 "{}: expected a JSON array of messages or an object with \"messages\"",
                 settings.messages_path);
  }
  ctx.set("add_generation_prompt", tmpl::Value(settings.generation_prompt));
  const auto& special = tok.special_tokens();
  if (special.bos_token) ctx.set("bos_token", tmpl::Value(*special.bos_token));
  if (special.eos_token) ctx.set("eos_token", tmpl::Value(*special.eos_token));
  if (special.pad_token) ctx.set("pad_token", tmpl::Value(*special.pad_token));
  if (special.unk_token) ctx.set("unk_token", tmpl::Value(*special.unk_token));
  if (!settings.kwargs_json.empty()) {
    auto kwargs = tmpl::value_from_json(settings.kwargs_json);
    if (!kwargs.is_ok() || !kwargs->is_dict()) {
      return Error(StatusCode::kInvalidArgument,
                   "--kwargs (RECUR_KWARGS): expected a JSON object, got '{}'",
                   settings.kwargs_json);
    }
    for (const auto& [k, v] : kwargs->as_dict().items) ctx.set_key(k, v);
  }
  return context;
}

Result<std::string> render_prompt(const TemplateSettings& settings, std::size_t& n_tokens) {
  if (settings.model_dir.empty()) {
    return Error(StatusCode::kInvalidArgument, "--model (RECUR_MODEL) is required");
  }
  if (settings.messages_path.empty()) {
    return Error(StatusCode::kInvalidArgument, "--messages (RECUR_MESSAGES) is required");
  }
  RECUR_ASSIGN_OR_RETURN(const std::string dir,
                         resolve_model_dir(settings.model_dir, settings.revision));
  RECUR_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load_dir(dir));
  if (!tok.chat_template()) {
    return Error(StatusCode::kNotFound,
                 "{} has no chat template (tokenizer_config.json or "
                 "chat_template.jinja)",
                 settings.model_dir);
  }
  auto parsed = tmpl::Template::parse(*tok.chat_template());
  if (!parsed.is_ok()) return parsed.status().with_context("chat template");
  RECUR_ASSIGN_OR_RETURN(tmpl::Value context, build_context(tok, settings));
  auto text = parsed->render(context);
  if (!text.is_ok()) return text.status().with_context("chat template");
  n_tokens = tok.encode(*text, {.parse_special = true, .add_special_tokens = false}).size();
  return text;
}

}  // namespace

int cmd_template(const TemplateSettings& settings) {
  std::size_t n_tokens = 0;
  auto text = render_prompt(settings, n_tokens);
  if (!text.is_ok()) {
    log::error("recur template: {}", text.status().message());
    return text.status().code() == StatusCode::kInvalidArgument &&
                   text.status().message().find("required") != std::string::npos
               ? kExitUsage
               : kExitFailure;
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "\n%zu tokens\n", n_tokens);
  return kExitOk;
}

}  // namespace recur::app
