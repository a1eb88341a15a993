// The generated tokenizers: a byte-level BPE learned deterministically from a built-in corpus,
// plus Qwen's added tokens, written as tokenizer.json and tokenizer_config.json in the shape of
// the real Qwen3 / Qwen3.5 files, and a SentencePiece-style BPE in the shape of Gemma 3's, so the
// Hugging Face tokenizers library loads them unchanged.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "modelgen/families.h"

namespace recur::modelgen {

extern const char* const kTrainingCorpus;
// The chat template fixtures/chat_templates/<name>.jinja (chat_templates.cc says whose each is).
std::string chat_template(std::string_view name);

struct AddedToken {
  std::string content;
  bool special = true;
};

struct BpeTokenizer {
  std::vector<std::string> vocab;  // id -> token, in the GPT-2 byte-to-unicode alphabet
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added;  // ids vocab.size(), vocab.size() + 1, ...
  SpecialIds ids;
  int n_tokens() const { return static_cast<int>(vocab.size() + added.size()); }
};

// GPT-2's bytes_to_unicode: byte b -> the code point that stands for it in vocab and merges.
char32_t byte_to_unicode(unsigned char b);

// Learns merges over the corpus until the BPE vocabulary (256 byte tokens + merges) has
// bpe_vocab_size tokens or no pair is left. Deterministic.
BpeTokenizer train_bpe(std::string_view corpus, int bpe_vocab_size);

// The tokenizer every generated checkpoint uses (1000 BPE tokens), trained once per process.
const BpeTokenizer& generated_tokenizer();
// The tokenizer of a family's checkpoints: generated_tokenizer() itself, or for llama its BPE
// with Llama 3's 256 special tokens instead of Qwen's; the llama-3.2-1b preset pads the BPE with
// unreachable tokens to 128000 so that the special tokens get Llama 3's ids (<|begin_of_text|> =
// 128000).
const BpeTokenizer& family_tokenizer(Family family, std::string_view preset);

// Pieces of the GPT-2-style files (tokenizer_hybrid.cc) the families' own writers share.
// pad_to > 0 fills the generated BPE's vocabulary with tokens no text encodes to ("<fill" + n +
// ">" is never one pre-tokenizer piece), so the added tokens after it get the real model's ids.
BpeTokenizer padded_tokenizer(int pad_to, std::vector<AddedToken> added);
nlohmann::ordered_json byte_level_json(bool trim_offsets);
nlohmann::ordered_json added_tokens_json(const BpeTokenizer& tok);
nlohmann::ordered_json bpe_model_json(const BpeTokenizer& tok);
// tokenizer_config.json's added_tokens_decoder: each added token by id.
nlohmann::ordered_json added_tokens_decoder_json(const BpeTokenizer& tok);
// A tokenizer.json of the tiktoken-converted kind (Granite 4.0, gpt-oss, SmolLM3): no normalizer,
// Split(split_regex, Isolated) then ByteLevel without its regex, ByteLevel post-processor and
// decoder, the BPE model.
std::string split_byte_level_tokenizer_json(const BpeTokenizer& tok, std::string_view split_regex);

// Qwen3.5's file (its pre-tokenizer regex) for qwen3_5 and mamba2; Qwen3's regex for qwen3; Llama
// 3's file (regex, ignore_merges, the <|begin_of_text|> post-processor) for llama.
std::string tokenizer_json(const BpeTokenizer& tok, Family family);
std::string tokenizer_config_json(const BpeTokenizer& tok, Family family, int max_position);

// The Mamba2 hybrids' (tokenizer_hybrid.cc), reached through the three above.
const BpeTokenizer& granite_tokenizer(std::string_view preset);
std::string granite_tokenizer_json(const BpeTokenizer& tok);
std::string granite_tokenizer_config_json(const BpeTokenizer& tok, int max_position);
const BpeTokenizer& nemotron_h_tokenizer();
std::string nemotron_h_tokenizer_config_json(const BpeTokenizer& tok, int max_position);
// Falcon-H1's: a byte-level BPE with the Llama 3 / cl100k pre-tokenizer regex (llama.cpp's
// "falcon-h1" pre-tokenizer) written as granite_tokenizer_json writes it, the generated BPE and
// ChatML's added tokens after it (not the real ids: docs/model-falcon-h1.md).
const BpeTokenizer& falcon_h1_tokenizer();
std::string falcon_h1_tokenizer_config_json(const BpeTokenizer& tok, int max_position);

// Gemma's kind (tokenizer_sp.cc): a SentencePiece BPE as Hugging Face converts it. Spaces are
// normalized to U+2581 ("▁"), the whole text is one word, pieces are code points merged by rank,
// and characters outside the vocabulary fall back to <0xXX> byte tokens. Ids as in Gemma 3: 0
// <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4 <mask>, 5 [multimodal], <unused0..98>, 105 <start_of_turn>,
// 106 <end_of_turn>; then the 256 byte tokens, the merged pieces, and the single characters.
struct SpTokenizer {
  std::vector<std::string> vocab;                           // id -> piece, added tokens first
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  int n_added = 0;                                          // ids [0, n_added) are added tokens
  SpecialIds ids;  // endoftext: <eos>, im_start: <start_of_turn>, im_end: <end_of_turn>
  int n_tokens() const { return static_cast<int>(vocab.size()); }
};
// Learned from kTrainingCorpus up to 1000 tokens, once per process. Deterministic.
const SpTokenizer& generated_sp_tokenizer();
std::string sp_tokenizer_json(const SpTokenizer& tok);
std::string sp_tokenizer_config_json(const SpTokenizer& tok, int max_position);

// LFM2's kind (tokenizer_lfm2.cc): the generated BPE with LFM2's 14 added tokens first (ids 0-13:
// <|startoftext|> 1, <|im_start|> 6, <|im_end|> 7), Llama 3's pre-tokenizer regex with
// ignore_merges, and LFM2.5-Instruct's chat template; lfm2-350m pads the vocabulary to 65536 with
// unreachable tokens.
struct Lfm2Tokenizer {
  std::vector<std::string> vocab;  // id -> token: the added tokens, then the BPE's
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<AddedToken> added;  // ids 0, 1, ...
  SpecialIds ids;                 // begin_of_text: <|startoftext|>, endoftext, im_start, im_end
  int n_tokens() const { return static_cast<int>(vocab.size()); }
};
const Lfm2Tokenizer& lfm2_tokenizer(std::string_view preset);
std::string lfm2_tokenizer_json(const Lfm2Tokenizer& tok);
std::string lfm2_tokenizer_config_json(const Lfm2Tokenizer& tok, int max_position);

}  // namespace recur::modelgen
