// The SentencePiece-style BPE of generated Gemma 3 checkpoints: merges learned over code points of
// the built-in corpus (spaces as "▁"), written as a tokenizer.json of the shape Hugging Face
// converts Gemma's SentencePiece model to (Replace normalizer, Split on " " that never splits,
// byte fallback, <bos> post-processor, Replace/ByteFallback/Fuse decoder).
#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "modelgen/tokenizer_gen.h"

namespace recur::modelgen {

namespace {

constexpr const char* kSpace = "\u2581";
constexpr int kTokens = 1000;

// Code points of s as UTF-8 strings (the corpus is valid UTF-8).
std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c0 = static_cast<unsigned char>(s[i]);
    const std::size_t len = c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4;
    out.emplace_back(s.substr(i, len));
    i += len;
  }
  return out;
}

// Training words as SentencePiece sees them: "▁" starts a word, newline runs stand alone.
std::map<std::vector<std::string>, std::int64_t> training_words(std::string_view corpus) {
  std::map<std::vector<std::string>, std::int64_t> words;
  std::vector<std::string> word;
  auto flush = [&] {
    if (!word.empty()) ++words[word];
    word.clear();
  };
  for (std::string& cp : code_points(corpus)) {
    if (cp == " ") cp = kSpace;
    const bool newline = cp == "\n";
    if (cp == kSpace || newline != (!word.empty() && word.back() == "\n")) flush();
    word.push_back(std::move(cp));
  }
  flush();
  return words;
}

SpTokenizer train(std::string_view corpus) {
  SpTokenizer tok;
  for (const char* s : {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[multimodal]"}) {
    tok.vocab.emplace_back(s);
  }
  for (int i = 0; i <= 98; ++i) tok.vocab.push_back(fmt::format("<unused{}>", i));
  tok.ids = {.endoftext = 1,
             .im_start = static_cast<int>(tok.vocab.size()),
             .im_end = static_cast<int>(tok.vocab.size()) + 1};
  tok.vocab.emplace_back("<start_of_turn>");
  tok.vocab.emplace_back("<end_of_turn>");
  tok.n_added = static_cast<int>(tok.vocab.size());
  for (int b = 0; b < 256; ++b) tok.vocab.push_back(fmt::format("<0x{:02X}>", b));

  // Symbols are ids into `text` (the characters first, in code point order); merges by count,
  // ties to the smallest id pair: deterministic.
  std::set<std::string> chars;
  const auto counted = training_words(corpus);
  for (const auto& [w, count] : counted) chars.insert(w.begin(), w.end());
  std::vector<std::string> text(chars.begin(), chars.end());
  std::map<std::string, int> id_of;
  for (std::size_t i = 0; i < text.size(); ++i) id_of.emplace(text[i], static_cast<int>(i));
  std::vector<std::pair<std::vector<int>, std::int64_t>> words;
  for (const auto& [w, count] : counted) {
    std::vector<int> syms;
    for (const std::string& c : w) syms.push_back(id_of.at(c));
    words.emplace_back(std::move(syms), count);
  }
  const int budget = kTokens - static_cast<int>(tok.vocab.size() + chars.size());
  std::vector<std::string> merged;
  while (static_cast<int>(merged.size()) < budget) {
    std::map<std::pair<int, int>, std::int64_t> pairs;
    for (const auto& [w, count] : words) {
      for (std::size_t i = 0; i + 1 < w.size(); ++i) pairs[{w[i], w[i + 1]}] += count;
    }
    auto best = pairs.end();
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (best == pairs.end() || it->second > best->second) best = it;
    }
    if (best == pairs.end() || best->second < 2) break;
    const auto [a, b] = best->first;
    const std::string joined =
        text[static_cast<std::size_t>(a)] + text[static_cast<std::size_t>(b)];
    tok.merges.emplace_back(text[static_cast<std::size_t>(a)], text[static_cast<std::size_t>(b)]);
    auto [it, inserted] = id_of.emplace(joined, static_cast<int>(text.size()));
    if (inserted) {
      text.push_back(joined);
      // A piece spelling an added or byte token ("<bos>" in the corpus) already has its id.
      if (std::find(tok.vocab.begin(), tok.vocab.end(), joined) == tok.vocab.end()) {
        merged.push_back(joined);
      }
    }
    for (auto& [w, count] : words) {
      std::size_t out = 0;
      for (std::size_t i = 0; i < w.size(); ++i, ++out) {
        const bool hit = i + 1 < w.size() && w[i] == a && w[i + 1] == b;
        w[out] = hit ? it->second : w[i];
        i += hit ? 1 : 0;
      }
      w.resize(out);
    }
  }
  // SentencePiece lists the pieces by score, merged ones before the single characters.
  tok.vocab.insert(tok.vocab.end(), merged.begin(), merged.end());
  tok.vocab.insert(tok.vocab.end(), chars.begin(), chars.end());
  return tok;
}

using OJson = nlohmann::ordered_json;

bool is_special(const SpTokenizer& tok, int id) {
  return id <= 3 || id == tok.ids.im_start || id == tok.ids.im_end;
}

OJson added_token(const SpTokenizer& tok, int id, bool with_id) {
  OJson j = OJson::object();
  if (with_id) j["id"] = id;
  j["content"] = tok.vocab[static_cast<std::size_t>(id)];
  j["single_word"] = false;
  j["lstrip"] = false;
  j["rstrip"] = false;
  j["normalized"] = false;
  j["special"] = is_special(tok, id);
  return j;
}

}  // namespace

const SpTokenizer& generated_sp_tokenizer() {
  static const SpTokenizer tok = train(kTrainingCorpus);
  return tok;
}

std::string sp_tokenizer_json(const SpTokenizer& tok) {
  OJson added = OJson::array();
  for (int i = 0; i < tok.n_added; ++i) added.push_back(added_token(tok, i, true));
  OJson vocab = OJson::object();
  for (std::size_t i = 0; i < tok.vocab.size(); ++i) vocab[tok.vocab[i]] = i;
  OJson merges = OJson::array();
  for (const auto& [a, b] : tok.merges) merges.push_back({a, b});
  const OJson bos = {{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}};
  const OJson post = {
      {"type", "TemplateProcessing"},
      {"single", {bos, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {bos,
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "<bos>"}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", {2}}, {"tokens", {"<bos>"}}}}}}};
  const OJson decoder = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
        {{"type", "ByteFallback"}},
        {{"type", "Fuse"}}}}};
  const OJson j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}},
      {"pre_tokenizer",
       {{"type", "Split"},
        {"pattern", {{"String", " "}}},
        {"behavior", "MergedWithPrevious"},
        {"invert", false}}},
      {"post_processor", post},
      {"decoder", decoder},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"ignore_merges", false},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merges)}}}};
  return j.dump(2) + "\n";
}

std::string sp_tokenizer_config_json(const SpTokenizer& tok, int max_position) {
  OJson decoder = OJson::object();
  for (int i = 0; i < tok.n_added; ++i) decoder[std::to_string(i)] = added_token(tok, i, false);
  const OJson j = {{"add_bos_token", true},
                   {"add_eos_token", false},
                   {"added_tokens_decoder", std::move(decoder)},
                   {"bos_token", "<bos>"},
                   {"chat_template", chat_template("gemma3")},
                   {"clean_up_tokenization_spaces", false},
                   {"eos_token", "<end_of_turn>"},
                   {"model_max_length", max_position},
                   {"pad_token", "<pad>"},
                   {"padding_side", "left"},
                   {"sp_model_kwargs", nullptr},
                   {"spaces_between_special_tokens", false},
                   {"tokenizer_class", "GemmaTokenizer"},
                   {"unk_token", "<unk>"},
                   {"use_default_system_prompt", false}};
  return j.dump(2) + "\n";
}

}  // namespace recur::modelgen
