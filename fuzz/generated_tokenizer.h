// The tokenizer of the generated checkpoints (modelgen, Qwen3.5's tokenizer.json shape), loaded
// once per fuzzing process from memory: the byte-level BPE that fuzz_tokenize and fuzz_detokenizer
// drive.
#pragma once

#include "modelgen/tokenizer_gen.h"
#include "tokenizer/tokenizer.h"
#include "util/check.h"

namespace recur::fuzz {

inline const tokenizer::Tokenizer& generated_tokenizer() {
  static const tokenizer::Tokenizer* tok = [] {
    const modelgen::BpeTokenizer& bpe = modelgen::generated_tokenizer();
    auto loaded = tokenizer::Tokenizer::load(
        modelgen::tokenizer_json(bpe, modelgen::Family::kQwen3_5),
        modelgen::tokenizer_config_json(bpe, modelgen::Family::kQwen3_5, 4096));
    RECUR_CHECK_MSG(loaded.is_ok(), "the generated tokenizer does not load");
    return new tokenizer::Tokenizer(std::move(loaded).value());
  }();
  return *tok;
}

}  // namespace recur::fuzz
