// A tokenizer for harmony tests until a generated gpt-oss checkpoint is at hand: byte-level, one
// token per byte (no merges), with o200k_harmony's special tokens at their real ids
// (<|startoftext|> 199998 ... <|call|> 200012), so harmony's markers tokenize as gpt-oss's do.
#pragma once

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/tokenizer.h"

namespace recur::test_support {

// GPT-2's byte-to-unicode map: the vocabulary's spelling of byte b.
inline std::string byte_token(unsigned char b) {
  auto printable = [](int x) {
    return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174;
  };
  char32_t cp = b;
  if (!printable(b)) {
    int n = 0;
    for (int x = 0; x < b; ++x) n += printable(x) ? 0 : 1;
    cp = 256 + static_cast<char32_t>(n);
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

inline const tokenizer::Tokenizer& harmony_tokenizer() {
  static const tokenizer::Tokenizer tok = [] {
    using json = nlohmann::ordered_json;
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_token(static_cast<unsigned char>(b))] = b;
    json added = json::array();
    const std::pair<int, const char*> specials[] = {
        {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"},
        {200003, "<|constrain|>"},   {200005, "<|channel|>"},   {200006, "<|start|>"},
        {200007, "<|end|>"},         {200008, "<|message|>"},   {200012, "<|call|>"}};
    for (const auto& [id, text] : specials) {
      added.push_back({{"id", id},
                       {"content", text},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
    }
    const json j = {{"version", "1.0"},
                    {"added_tokens", added},
                    {"normalizer", nullptr},
                    {"pre_tokenizer",
                     {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
                    {"post_processor", nullptr},
                    {"decoder", {{"type", "ByteLevel"}}},
                    {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
    const json config = {{"eos_token", "<|return|>"}, {"pad_token", "<|endoftext|>"}};
    auto t = tokenizer::Tokenizer::load(j.dump(), config.dump());
    if (!t.is_ok()) std::abort();
    return std::move(t).value();
  }();
  return tok;
}

}  // namespace recur::test_support
