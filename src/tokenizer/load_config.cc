// The post-processor of tokenizer.json and tokenizer_config.json (special-token strings, BOS/EOS
// flags, chat template).
#include "tokenizer/json_util.h"
#include "tokenizer/model.h"

namespace recur::tokenizer::detail {
namespace {

Result<std::vector<TokenId>> template_piece(const Json& item, const Json& specials,
                                            std::string_view path, bool& is_sequence) {
  is_sequence = false;
  if (item.is_object() && item.contains("Sequence")) {
    is_sequence = true;
    return std::vector<TokenId>{};
  }
  if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object()) {
    return field_error(path, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
  }
  RECUR_ASSIGN_OR_RETURN(std::string name, req_string(item["SpecialToken"], "id", path));
  if (!specials.is_object() || !specials.contains(name) || !specials[name].is_object() ||
      !specials[name].contains("ids") || !specials[name]["ids"].is_array()) {
    return field_error(path, fmt::format("special token '{}' has no ids in special_tokens", name));
  }
  std::vector<TokenId> ids;
  for (const Json& id : specials[name]["ids"]) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > std::numeric_limits<TokenId>::max()) {
      return field_error(path, fmt::format("special token '{}' has a bad id", name));
    }
    ids.push_back(static_cast<TokenId>(id.get<std::int64_t>()));
  }
  return ids;
}

Status parse_template(const Json& p, std::string_view path, PostProcess& post) {
  auto single = p.find("single");
  std::string list = join_path(path, "single");
  if (single == p.end() || !single->is_array()) return field_error(list, "expected an array");
  const Json empty = Json::object();
  const Json& specials = p.contains("special_tokens") ? p["special_tokens"] : empty;
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single->size(); ++i) {
    bool is_sequence = false;
    RECUR_ASSIGN_OR_RETURN(
        std::vector<TokenId> ids,
        template_piece((*single)[i], specials, index_path(list, i), is_sequence));
    if (is_sequence) {
      if (seen_sequence) return field_error(index_path(list, i), "a second Sequence");
      seen_sequence = true;
    }
    auto& side = seen_sequence ? post.after : post.before;
    side.insert(side.end(), ids.begin(), ids.end());
  }
  return Status::ok();
}

Result<TokenId> pair_id(const Json& p, std::string_view key, std::string_view path) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
    return field_error(join_path(path, key), "expected [token, id]");
  }
  return static_cast<TokenId>((*it)[1].get<std::int64_t>());
}

// bos_token and friends: a string, null, or an AddedToken object {"content": ...}.
Result<std::optional<std::string>> token_string(const Json& cfg, std::string_view key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::optional<std::string>{};
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return std::optional<std::string>((*it)["content"].get<std::string>());
  }
  return field_error(key, "expected a string, null or an AddedToken object");
}

Result<std::optional<std::string>> chat_template_of(const Json& cfg) {
  auto it = cfg.find("chat_template");
  if (it == cfg.end() || it->is_null()) return std::optional<std::string>{};
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (!it->is_array()) return field_error("chat_template", "expected a string or a list");
  // A list of named templates: the one named "default" is the chat template.
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    std::string path = index_path("chat_template", i);
    RECUR_ASSIGN_OR_RETURN(std::string name, req_string(t, "name", path));
    RECUR_ASSIGN_OR_RETURN(std::string text, req_string(t, "template", path));
    if (name == "default") return std::optional<std::string>(std::move(text));
  }
  return std::optional<std::string>{};
}

}  // namespace

Status parse_post_processor(const Json& p, std::string_view path, Model& model) {
  if (p.is_null()) return Status::ok();
  RECUR_ASSIGN_OR_RETURN(std::string type, type_of(p, path));
  if (type == "ByteLevel") return Status::ok();  // only adjusts offsets
  if (type == "TemplateProcessing") return parse_template(p, path, model.post);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    RECUR_ASSIGN_OR_RETURN(TokenId cls, pair_id(p, "cls", path));
    RECUR_ASSIGN_OR_RETURN(TokenId sep, pair_id(p, "sep", path));
    model.post.before.push_back(cls);
    model.post.after.insert(model.post.after.begin(), sep);
    return Status::ok();
  }
  if (type == "Sequence") {
    auto it = p.find("processors");
    std::string list = join_path(path, "processors");
    if (it == p.end() || !it->is_array()) return field_error(list, "expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      RECUR_RETURN_IF_ERROR(parse_post_processor((*it)[i], index_path(list, i), model));
    }
    return Status::ok();
  }
  return Error(StatusCode::kUnimplemented, "{}.type: '{}' is not supported", path, type);
}

Status parse_tokenizer_config(std::string_view text, Model& model) {
  auto parsed = parse_json(text, "tokenizer_config.json");
  if (!parsed.is_ok()) return parsed.status();
  const Json& cfg = *parsed;
  if (!cfg.is_object()) return field_error("tokenizer_config.json", "expected an object");
  SpecialTokens& s = model.special;
  Status st = Status::ok();
  auto take = [&](std::string_view key, std::optional<std::string>& out) {
    if (!st.is_ok()) return;
    auto r = token_string(cfg, key);
    if (r.is_ok())
      out = *r;
    else
      st = r.status();
  };
  take("bos_token", s.bos_token);
  take("eos_token", s.eos_token);
  take("pad_token", s.pad_token);
  take("unk_token", s.unk_token);
  if (st.is_ok()) {
    auto bos = opt_bool(cfg, "add_bos_token", false, "");
    auto eos = opt_bool(cfg, "add_eos_token", false, "");
    if (!bos.is_ok())
      st = bos.status();
    else if (!eos.is_ok())
      st = eos.status();
    else
      s.add_bos_token = *bos, s.add_eos_token = *eos;
  }
  if (st.is_ok()) {
    auto tpl = chat_template_of(cfg);
    if (tpl.is_ok())
      model.chat_template = *tpl;
    else
      st = tpl.status();
  }
  return st.is_ok() ? st : st.with_context("tokenizer_config.json");
}

}  // namespace recur::tokenizer::detail
