// Tokenizer facade: loading and the encode pipeline (added tokens, normalizer, added tokens of
// the normalized text, pre-tokenizer, BPE, post-processor), decode and vocabulary lookups.
#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "tokenizer/added.h"
#include "tokenizer/model.h"
#include "tokenizer/unicode.h"
#include "util/mmap_file.h"

namespace recur::tokenizer {

using detail::Model;
using detail::Piece;
using detail::Segment;

Tokenizer::Tokenizer(std::unique_ptr<Model> model) : model_(std::move(model)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::load(std::string_view tokenizer_json,
                                  std::string_view tokenizer_config_json) {
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                         detail::parse_tokenizer_json(tokenizer_json));
  if (!tokenizer_config_json.empty()) {
    RECUR_RETURN_IF_ERROR(detail::parse_tokenizer_config(tokenizer_config_json, *model));
  }
  Tokenizer tok(std::move(model));
  const SpecialTokens& s = tok.model_->special;
  if (s.bos_token) tok.model_->bos_id = tok.token_id(*s.bos_token);
  if (s.eos_token) tok.model_->eos_id = tok.token_id(*s.eos_token);
  return tok;
}

Result<Tokenizer> Tokenizer::load_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string json_path = (fs::path(dir) / "tokenizer.json").string();
  RECUR_ASSIGN_OR_RETURN(std::string json, read_file(json_path));
  std::string config;
  std::error_code ec;
  fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  if (fs::exists(config_path, ec)) {
    RECUR_ASSIGN_OR_RETURN(config, read_file(config_path.string()));
  }
  auto tok = load(json, config);
  if (!tok.is_ok()) return tok.status().with_context(dir);
  fs::path jinja = fs::path(dir) / "chat_template.jinja";
  if (fs::exists(jinja, ec)) {
    RECUR_ASSIGN_OR_RETURN(std::string tpl, read_file(jinja.string()));
    tok->model_->chat_template = std::move(tpl);
  }
  return tok;
}

namespace {

// Pre-tokenizes and BPE-encodes one stretch of normalized text without added tokens.
void encode_plain(const Model& m, std::string_view text, bool at_start, std::vector<TokenId>& out) {
  if (text.empty()) return;
  thread_local std::string arena;
  thread_local std::vector<Piece> pieces;
  arena.assign(text);
  pieces.assign(1, Piece{0, text.size()});
  detail::pre_tokenize(m, arena, at_start, pieces);
  for (const Piece& p : pieces) {
    m.bpe.encode_word(std::string_view(arena.data() + p.offset, p.n_bytes), m.byte_level, out);
  }
}

void encode_segment(const Model& m, std::string_view raw, bool at_start, bool parse_special,
                    std::vector<TokenId>& out) {
  std::string normalized(raw);
  detail::normalize(m.normalizers, normalized);
  if (m.normalized_matcher.empty()) {
    encode_plain(m, normalized, at_start, out);
    return;
  }
  std::vector<Segment> parts;
  detail::find_added(normalized, m.normalized_matcher, m.added, parse_special, parts);
  for (const Segment& s : parts) {
    if (s.added >= 0) {
      out.push_back(m.added[static_cast<std::size_t>(s.added)].id);
    } else {
      encode_plain(m, std::string_view(normalized).substr(s.begin, s.end - s.begin),
                   at_start && s.begin == 0, out);
    }
  }
}

}  // namespace

void Tokenizer::encode_into(std::string_view text, EncodeOptions opts,
                            std::vector<TokenId>& out) const {
  const Model& m = *model_;
  std::string repaired;
  if (!detail::utf8_is_valid(text)) {
    repaired = detail::utf8_repair(text);
    text = repaired;
  }
  if (opts.add_special_tokens) out.insert(out.end(), m.post.before.begin(), m.post.before.end());
  thread_local std::vector<Segment> segments;
  if (m.raw_matcher.empty()) {
    segments.assign(1, Segment{0, text.size(), -1});
  } else {
    detail::find_added(text, m.raw_matcher, m.added, opts.parse_special, segments);
  }
  // Copied: encode_segment may run find_added again on this thread.
  std::vector<Segment> parts = segments;
  for (const Segment& s : parts) {
    if (s.added >= 0) {
      out.push_back(m.added[static_cast<std::size_t>(s.added)].id);
    } else {
      encode_segment(m, text.substr(s.begin, s.end - s.begin), s.begin == 0, opts.parse_special,
                     out);
    }
  }
  if (opts.add_special_tokens) out.insert(out.end(), m.post.after.begin(), m.post.after.end());
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, EncodeOptions opts) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 8);
  encode_into(text, opts, out);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  std::string bytes = detail::decode_tokens(*model_, ids, skip_special, /*keep_tail=*/false);
  return detail::utf8_is_valid(bytes) ? bytes : detail::utf8_repair(bytes);
}

std::string Tokenizer::decode_bytes(std::span<const TokenId> ids, bool skip_special) const {
  return detail::decode_tokens(*model_, ids, skip_special, /*keep_tail=*/true);
}

std::string Tokenizer::decode_raw(std::span<const TokenId> ids, bool skip_special) const {
  return detail::decode_tokens(*model_, ids, skip_special, /*keep_tail=*/true, /*raw=*/true);
}

std::vector<std::string> Tokenizer::token_byte_table() const {
  return detail::token_byte_table(*model_);
}

std::optional<TokenId> Tokenizer::token_id(std::string_view token) const {
  auto added = model_->added_by_content.find(std::string(token));
  if (added != model_->added_by_content.end()) return added->second;
  return model_->bpe.token_to_id.lookup(token);
}

std::string_view Tokenizer::token_text(TokenId id) const {
  auto added = model_->added_by_id.find(id);
  if (added != model_->added_by_id.end()) return model_->added[added->second].content;
  const auto& vocab = model_->bpe.id_to_token;
  if (id < 0 || static_cast<std::size_t>(id) >= vocab.size()) return {};
  return vocab[static_cast<std::size_t>(id)];
}

std::size_t Tokenizer::vocab_size() const { return model_->vocab_size; }

bool Tokenizer::is_special(TokenId id) const {
  auto added = model_->added_by_id.find(id);
  return added != model_->added_by_id.end() && model_->added[added->second].special;
}

std::span<const AddedToken> Tokenizer::added_tokens() const { return model_->added; }
const std::optional<std::string>& Tokenizer::chat_template() const { return model_->chat_template; }
const SpecialTokens& Tokenizer::special_tokens() const { return model_->special; }
std::optional<TokenId> Tokenizer::bos_id() const { return model_->bos_id; }
std::optional<TokenId> Tokenizer::eos_id() const { return model_->eos_id; }

}  // namespace recur::tokenizer
