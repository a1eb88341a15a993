// Tokenizer facade: load, encode, decode (temporary stub while the pipeline lands).
#include "tokenizer/tokenizer.h"

namespace recur::tokenizer {
namespace detail {
struct Model {
  std::optional<std::string> chat_template;
  SpecialTokens special;
};
}  // namespace detail

Tokenizer::Tokenizer(std::unique_ptr<detail::Model> model) : model_(std::move(model)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::load_dir(const std::string&) {
  return Error(StatusCode::kUnimplemented, "tokenizer: not implemented yet");
}
Result<Tokenizer> Tokenizer::load(std::string_view, std::string_view) {
  return Error(StatusCode::kUnimplemented, "tokenizer: not implemented yet");
}
std::vector<TokenId> Tokenizer::encode(std::string_view, EncodeOptions) const { return {}; }
void Tokenizer::encode_into(std::string_view, EncodeOptions, std::vector<TokenId>&) const {}
std::string Tokenizer::decode(std::span<const TokenId>, bool) const { return {}; }
std::string Tokenizer::decode_bytes(std::span<const TokenId>, bool) const { return {}; }
std::optional<TokenId> Tokenizer::token_id(std::string_view) const { return std::nullopt; }
std::string_view Tokenizer::token_text(TokenId) const { return {}; }
std::size_t Tokenizer::vocab_size() const { return 0; }
bool Tokenizer::is_special(TokenId) const { return false; }
std::span<const AddedToken> Tokenizer::added_tokens() const { return {}; }
const std::optional<std::string>& Tokenizer::chat_template() const { return model_->chat_template; }
const SpecialTokens& Tokenizer::special_tokens() const { return model_->special; }
std::optional<TokenId> Tokenizer::bos_id() const { return std::nullopt; }
std::optional<TokenId> Tokenizer::eos_id() const { return std::nullopt; }

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer,
                                           std::vector<std::string> stop_strings, bool skip_special)
    : tokenizer_(&tokenizer), stops_(std::move(stop_strings)), skip_special_(skip_special) {}
std::string StreamingDetokenizer::push(TokenId) { return {}; }
std::string StreamingDetokenizer::finish() { return {}; }
std::string StreamingDetokenizer::release(std::string, bool) { return {}; }

}  // namespace recur::tokenizer
