// Hugging Face tokenizer.json: text to token ids and back, byte-for-byte as the `tokenizers`
// library does for the BPE families recur serves (byte-level BPE and SentencePiece-style BPE).
// Not a general tokenizer library: WordPiece/Unigram models are rejected at load with an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace recur::tokenizer {

using TokenId = std::int32_t;

struct EncodeOptions {
  // false: special added tokens ("<|im_start|>", special: true) in the text are plain text, as HF's
  // encode_special_tokens / split_special_tokens; non-special added tokens (Qwen's "<think>") stay
  // atomic as in HF. Use false for untrusted user text.
  bool parse_special = true;
  // true: apply the post-processor (e.g. TemplateProcessing adds Gemma's <bos>), as HF's
  // encode(text, add_special_tokens=True). The chat path renders BOS through the template: false.
  bool add_special_tokens = false;
};

// What tokenizer_config.json says about special tokens (strings or AddedToken objects there).
struct SpecialTokens {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;
  bool add_bos_token = false;
  bool add_eos_token = false;
};

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

namespace detail {
struct Model;  // the loaded pipeline, immutable after load (model.h)
}

// Thread-safe for concurrent const use (the word cache inside is internally synchronized); cheap
// to move (one pointer); not copyable.
class Tokenizer {
 public:
  // dir holds tokenizer.json and optionally tokenizer_config.json and chat_template.jinja.
  static Result<Tokenizer> load_dir(const std::string& dir);
  // tokenizer_config_json may be empty (no config file).
  static Result<Tokenizer> load(std::string_view tokenizer_json,
                                std::string_view tokenizer_config_json);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Invalid UTF-8 in text is encoded as if each bad sequence were U+FFFD.
  std::vector<TokenId> encode(std::string_view text, EncodeOptions opts = {}) const;
  // Appends to out (no reallocation when out has room): the hot path of prompt building.
  void encode_into(std::string_view text, EncodeOptions opts, std::vector<TokenId>& out) const;
  // Ids that are not in the vocabulary are skipped; invalid UTF-8 becomes U+FFFD, as HF does.
  std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;
  // Bytes before the final UTF-8 repair (for streaming: an incomplete character at the end stays
  // incomplete instead of becoming U+FFFD).
  std::string decode_bytes(std::span<const TokenId> ids, bool skip_special = false) const;
  // The bytes behind the text, with no repair at all: byte-fallback tokens are their bytes even
  // where they are not valid UTF-8 ("<0x80>" is 0x80, where decode gives U+FFFD), as byte-level
  // BPE's decode_bytes are. A token's `bytes` in logprobs.
  std::string decode_raw(std::span<const TokenId> ids, bool skip_special = false) const;

  // What each token adds to the text in the middle of a sequence, indexed by id: byte-fallback
  // tokens their byte, partial UTF-8 characters their raw bytes, special added tokens nothing.
  // Constrained decoding matches grammars against these.
  std::vector<std::string> token_byte_table() const;

  // Exact vocabulary or added-token string ("Ġhello", "<|im_end|>").
  std::optional<TokenId> token_id(std::string_view token) const;
  // The vocabulary string of id (not decoded); empty for an unknown id.
  std::string_view token_text(TokenId id) const;
  // 1 + the largest id of the vocabulary and the added tokens.
  std::size_t vocab_size() const;
  bool is_special(TokenId id) const;  // an added token marked special
  std::span<const AddedToken> added_tokens() const;

  // From tokenizer_config.json ("chat_template", the "default" one of a named list) or
  // chat_template.jinja in the directory.
  const std::optional<std::string>& chat_template() const;
  const SpecialTokens& special_tokens() const;
  std::optional<TokenId> bos_id() const;  // id of special_tokens().bos_token, if any
  std::optional<TokenId> eos_id() const;

 private:
  explicit Tokenizer(std::unique_ptr<detail::Model> model);
  std::unique_ptr<detail::Model> model_;
};

// Turns generated ids into text as they arrive: each push returns only text that is final (never
// half a UTF-8 character, never text that might still turn out to be the start of a stop string).
// When a stop string appears, even across tokens, push returns the text before it and stopped()
// turns true; later pushes return nothing. Thread-compatible; borrows the tokenizer.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer,
                                std::vector<std::string> stop_strings = {},
                                bool skip_special = false);
  std::string push(TokenId id);
  // End of generation: the text still held back (an incomplete character becomes U+FFFD).
  std::string finish();
  bool stopped() const { return stop_index_.has_value(); }
  // Which of stop_strings ended the text.
  std::optional<std::size_t> stop_index() const { return stop_index_; }
  // The bytes behind the text the last push or finish returned, where the decoder replaced
  // invalid UTF-8 in it with U+FFFD (a stray byte token, an unfinished character before other
  // text); empty where they are that text.
  const std::string& bytes() const { return bytes_; }

 private:
  std::string release(std::string text, std::string raw, bool final);
  std::string fresh_raw() const;
  void keep_context();
  const Tokenizer* tokenizer_;
  std::vector<std::string> stops_;
  bool skip_special_;
  std::vector<TokenId> ids_;  // tokens since the last emission point (the decode window)
  std::size_t prefix_n_ = 0;  // ids_[0, prefix_n_) were already emitted
  std::string held_;          // decoded text held back for stop-string matching
  std::string held_raw_;      // the bytes behind held_
  std::string bytes_;         // see bytes()
  bool in_byte_run_ = false;  // the last token the decoder sees is a byte-fallback token
  std::string run_;           // the bytes of that run of byte-fallback tokens
  bool run_doomed_ = false;   // run_ can no longer become valid UTF-8, and its text is out
  std::optional<std::size_t> stop_index_;
  bool finished_ = false;
};

}  // namespace recur::tokenizer
