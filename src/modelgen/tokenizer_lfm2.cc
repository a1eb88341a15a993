// LFM2's tokenizer files (docs/model-lfm2.md): a byte-level BPE whose added tokens come first
// (ids 0-13: <|pad|>, <|startoftext|>, <|endoftext|>, the FIM tokens, <|im_start|> = 6,
// <|im_end|> = 7, the tool-list / tool-call / tool-response markers), Llama 3's pre-tokenizer
// regex with ignore_merges (llama.cpp reads LFM2's as its "llama3" kind), a post-processor that
// puts <|startoftext|> first, and LFM2.5-Instruct's chat template.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "modelgen/tokenizer_gen.h"

namespace recur::modelgen {

namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kLlama3StyleRegex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// The tool markers are not special: they must survive a decode that skips special tokens, so
// that the server sees a call (the template's tool turns use them as plain text too).
const std::vector<AddedToken>& lfm2_added() {
  static const std::vector<AddedToken> kAdded = {{"<|pad|>", true},
                                                 {"<|startoftext|>", true},
                                                 {"<|endoftext|>", true},
                                                 {"<|fim_pre|>", true},
                                                 {"<|fim_mid|>", true},
                                                 {"<|fim_suf|>", true},
                                                 {"<|im_start|>", true},
                                                 {"<|im_end|>", true},
                                                 {"<|tool_list_start|>", false},
                                                 {"<|tool_list_end|>", false},
                                                 {"<|tool_call_start|>", false},
                                                 {"<|tool_call_end|>", false},
                                                 {"<|tool_response_start|>", false},
                                                 {"<|tool_response_end|>", false}};
  return kAdded;
}

OJson added_entry(int id, const AddedToken& t) {
  return {{"id", id},        {"content", t.content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false},  {"special", t.special}};
}

}  // namespace

namespace {
Lfm2Tokenizer make_lfm2_tokenizer(int pad_to) {
  Lfm2Tokenizer tok;
  tok.added = lfm2_added();
  const BpeTokenizer& bpe = generated_tokenizer();
  for (const AddedToken& t : tok.added) tok.vocab.push_back(t.content);
  tok.vocab.insert(tok.vocab.end(), bpe.vocab.begin(), bpe.vocab.end());
  // Unreachable fill tokens ("<fill" + n + ">" is never one pre-tokenizer piece), so the real
  // preset's embedding has LFM2's 65536 rows with every id a token.
  for (int i = 0; static_cast<int>(tok.vocab.size()) < pad_to; ++i) {
    tok.vocab.push_back(fmt::format("<fill{}>", i));
  }
  tok.merges = bpe.merges;
  tok.ids = {.endoftext = 2, .im_start = 6, .im_end = 7, .begin_of_text = 1};
  return tok;
}
}  // namespace

const Lfm2Tokenizer& lfm2_tokenizer(std::string_view preset) {
  if (preset == "lfm2-350m" || preset == "lfm2-8b-a1b") {
    static const Lfm2Tokenizer real = make_lfm2_tokenizer(65536);
    return real;
  }
  static const Lfm2Tokenizer tiny = make_lfm2_tokenizer(0);
  return tiny;
}

std::string lfm2_tokenizer_json(const Lfm2Tokenizer& tok) {
  OJson added = OJson::array();
  for (std::size_t i = 0; i < tok.added.size(); ++i) {
    added.push_back(added_entry(static_cast<int>(i), tok.added[i]));
  }
  const std::string bos = tok.added[1].content;
  const OJson split = {{"type", "Split"},
                       {"pattern", {{"Regex", kLlama3StyleRegex}}},
                       {"behavior", "Isolated"},
                       {"invert", false}};
  const OJson byte_level_pre = {{"type", "ByteLevel"},
                                {"add_prefix_space", false},
                                {"trim_offsets", true},
                                {"use_regex", false}};
  auto piece = [](const char* kind, const std::string& id, int type_id) {
    return OJson{{kind, {{"id", id}, {"type_id", type_id}}}};
  };
  const OJson templ = {
      {"type", "TemplateProcessing"},
      {"single", {piece("SpecialToken", bos, 0), piece("Sequence", "A", 0)}},
      {"pair",
       {piece("SpecialToken", bos, 0), piece("Sequence", "A", 0), piece("SpecialToken", bos, 1),
        piece("Sequence", "B", 1)}},
      {"special_tokens",
       {{bos, {{"id", bos}, {"ids", {tok.ids.begin_of_text}}, {"tokens", {bos}}}}}}};
  const OJson post = {{"type", "Sequence"},
                      {"processors",
                       {{{"type", "ByteLevel"},
                         {"add_prefix_space", true},
                         {"trim_offsets", false},
                         {"use_regex", true}},
                        templ}}};
  OJson vocab = OJson::object();
  for (std::size_t i = 0; i < tok.vocab.size(); ++i) vocab[tok.vocab[i]] = i;
  OJson merges = OJson::array();
  for (const auto& [a, b] : tok.merges) merges.push_back({a, b});
  const OJson model = {{"type", "BPE"},
                       {"dropout", nullptr},
                       {"unk_token", nullptr},
                       {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr},
                       {"fuse_unk", false},
                       {"byte_fallback", false},
                       {"ignore_merges", true},
                       {"vocab", std::move(vocab)},
                       {"merges", std::move(merges)}};
  const OJson j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level_pre}}}},
      {"post_processor", post},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"model", model}};
  return j.dump(2) + "\n";
}

std::string lfm2_tokenizer_config_json(const Lfm2Tokenizer& tok, int max_position) {
  OJson decoder = OJson::object();
  for (std::size_t i = 0; i < tok.added.size(); ++i) {
    OJson e = added_entry(static_cast<int>(i), tok.added[i]);
    e.erase("id");
    decoder[std::to_string(i)] = std::move(e);
  }
  const OJson j = {{"add_bos_token", false},
                   {"add_eos_token", false},
                   {"added_tokens_decoder", std::move(decoder)},
                   {"bos_token", "<|startoftext|>"},
                   {"chat_template", chat_template("lfm2")},
                   {"clean_up_tokenization_spaces", false},
                   {"eos_token", "<|im_end|>"},
                   {"legacy", false},
                   {"model_max_length", max_position},
                   {"pad_token", "<|pad|>"},
                   {"sp_model_kwargs", OJson::object()},
                   {"spaces_between_special_tokens", false},
                   {"tokenizer_class", "PreTrainedTokenizerFast"},
                   {"use_default_system_prompt", false}};
  return j.dump(2) + "\n";
}
}  // namespace recur::modelgen
