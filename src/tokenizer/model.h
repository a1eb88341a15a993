// The loaded tokenizer pipeline (internal to tokenizer/): typed form of tokenizer.json, built once
// by load_json.cc and immutable afterwards except for the internally locked word cache.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace recur::tokenizer::detail {

struct NormStep {
  enum class Kind : std::uint8_t {
    kNfc,
    kNfd,
    kNfkc,
    kNfkd,
    kReplace,
    kPrepend,
    kStrip,
    kLowercase
  };
  Kind kind = Kind::kNfc;
  std::string pattern;               // kReplace (string pattern), kPrepend (the prefix)
  std::string content;               // kReplace replacement
  std::shared_ptr<Regex> regex;      // kReplace with a Regex pattern
  bool left = false, right = false;  // kStrip
};

enum class SplitBehavior : std::uint8_t {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};

struct PreStep {
  enum class Kind : std::uint8_t { kSplit, kByteLevel, kDigits, kMetaspace, kWhitespaceSplit };
  Kind kind = Kind::kSplit;
  std::string literal;           // kSplit with a String pattern
  std::shared_ptr<Regex> regex;  // kSplit with a Regex pattern; kByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;   // kByteLevel
  bool individual_digits = false;  // kDigits
  std::string replacement;         // kMetaspace
  enum class Prepend : std::uint8_t { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;  // kMetaspace
};

struct DecStep {
  enum class Kind : std::uint8_t { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kByteLevel;
  std::string pattern, content;     // kReplace; kStrip content; kMetaspace replacement
  std::size_t start = 0, stop = 0;  // kStrip
  bool prepend = true;              // kMetaspace: strip the space it prepended to the first token
};

// Post-processor for a single sequence: ids before and after the encoded text.
struct PostProcess {
  std::vector<TokenId> before, after;
};

// Added tokens matched literally before normalization (or after it, for normalized ones).
class AddedMatcher {
 public:
  void add(std::string_view content, std::uint32_t index);
  // Longest token starting at text[pos]; returns its index or -1, and its length in n_bytes.
  std::int64_t longest_at(std::string_view text, std::size_t pos, std::size_t& n_bytes) const;
  bool empty() const { return nodes_.size() <= 1; }
  bool can_start(unsigned char c) const { return first_[c]; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::uint32_t>> children;  // sorted by byte
    std::int64_t token = -1;
  };
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};
};

struct Model {
  Bpe bpe;
  std::vector<AddedToken> added;                           // as listed in tokenizer.json
  std::unordered_map<TokenId, std::uint32_t> added_by_id;  // id -> index in added
  std::unordered_map<std::string, TokenId> added_by_content;
  AddedMatcher raw_matcher;         // added tokens with normalized == false
  AddedMatcher normalized_matcher;  // normalized == true
  std::vector<NormStep> normalizers;
  std::vector<PreStep> pre_tokenizers;
  bool byte_level = false;  // a ByteLevel pre-tokenizer maps bytes before BPE
  std::vector<DecStep> decoders;
  bool has_decoder = false;
  PostProcess post;
  std::size_t vocab_size = 0;

  std::optional<std::string> chat_template;
  SpecialTokens special;
  std::optional<TokenId> bos_id, eos_id;
};

// tokenizer.json -> Model (load_json.cc). Errors name the JSON path of the bad field.
Result<std::unique_ptr<Model>> parse_tokenizer_json(std::string_view json);
// tokenizer_config.json -> special tokens and chat template (load_config.cc).
Status parse_tokenizer_config(std::string_view json, Model& model);

// Pipeline stages (encode.cc, normalize.cc, pretokenize.cc, decode.cc).
void normalize(const std::vector<NormStep>& steps, std::string& text);
// A piece of text to be BPE-encoded; the pieces of one encode call live in an arena.
struct Piece {
  std::size_t offset, n_bytes;  // into the arena
};
void pre_tokenize(const Model& model, std::string& arena, bool at_start,
                  std::vector<Piece>& pieces);
// Bytes of the decoded ids, before UTF-8 repair. keep_tail: an unfinished character made of
// byte-fallback tokens at the end stays raw instead of becoming U+FFFD (streaming). raw: every
// run of byte-fallback tokens stays its bytes, valid or not (the bytes behind the text).
// Tokenizer::token_byte_table (decode.cc).
std::vector<std::string> token_byte_table(const Model& model);
std::string decode_tokens(const Model& model, std::span<const TokenId> ids, bool skip_special,
                          bool keep_tail, bool raw = false);

}  // namespace recur::tokenizer::detail
