// A small deterministic BPE trainer over the built-in corpus, and the tokenizer.json /
// tokenizer_config.json writers (layout of the real Qwen files, model-families.md section 9, and of
// Llama 3.1/3.2's, docs/model-llama.md).
#include "modelgen/tokenizer_gen.h"

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "util/utf8.h"

namespace recur::modelgen {

namespace {

// Bytes that GPT-2 keeps as their own code point; the rest are moved to 256 + n, in byte order.
bool is_printable_byte(int b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

// Decodes one UTF-8 code point at s[i] (the corpus is valid UTF-8) and advances i.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  const int len = c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4;
  char32_t cp = len == 1 ? c0 : c0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += static_cast<std::size_t>(len);
  return cp;
}

enum class Cls { kLetter, kDigit, kNewline, kSpace, kOther };

Cls classify(char32_t cp) {
  if (cp == '\n' || cp == '\r') return Cls::kNewline;
  if (cp == ' ' || cp == '\t') return Cls::kSpace;
  if (cp >= '0' && cp <= '9') return Cls::kDigit;
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return Cls::kLetter;
  // Outside ASCII, general punctuation and CJK punctuation are "other", the rest counts as a
  // letter: close enough to \p{L}\p{M} for choosing merges (encoding uses the real regex).
  if (cp < 0x80 || (cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F) ||
      (cp >= 0xFF00 && cp <= 0xFF20) || cp >= 0x1F000 || cp == 0xA0 || cp == 0xBF) {
    return Cls::kOther;
  }
  return Cls::kLetter;
}

// Splits text roughly as the Qwen pre-tokenizer regex does: " word", single digits, " punct",
// newline runs, space runs that leave their last space to the next word.
std::vector<std::string> pre_split(std::string_view text) {
  std::vector<std::pair<char32_t, std::size_t>> cps;  // code point, byte offset
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    cps.emplace_back(next_code_point(text, i), at);
  }
  auto cls_at = [&](std::size_t k) {
    return k < cps.size() ? classify(cps[k].first) : Cls::kSpace;
  };
  auto run = [&](std::size_t k, auto pred) {
    while (k < cps.size() && pred(cls_at(k))) ++k;
    return k;
  };
  std::vector<std::string> pieces;
  for (std::size_t k = 0; k < cps.size();) {
    const Cls c = cls_at(k);
    std::size_t end = k + 1;
    const auto letter = [](Cls x) { return x == Cls::kLetter; };
    const auto other = [](Cls x) { return x == Cls::kOther; };
    const auto space = [](Cls x) { return x == Cls::kSpace || x == Cls::kNewline; };
    if (c == Cls::kLetter) {
      end = run(k, letter);
    } else if (c == Cls::kDigit) {
      end = k + 1;
    } else if (c != Cls::kNewline && cls_at(k + 1) == Cls::kLetter) {
      end = run(k + 1, letter);
    } else if (c == Cls::kOther || (cps[k].first == ' ' && cls_at(k + 1) == Cls::kOther)) {
      end = run(run(k + 1, other), [](Cls x) { return x == Cls::kNewline; });
    } else {
      end = run(k, space);
      std::size_t last_newline = end;
      for (std::size_t j = k; j < end; ++j) {
        if (cls_at(j) == Cls::kNewline) last_newline = j + 1;
      }
      if (last_newline != end) {
        end = last_newline;
      } else if (end < cps.size() && end - k > 1) {
        --end;  // \s+(?!\S): the last space goes with the next word
      }
    }
    const std::size_t from = cps[k].second, to = end < cps.size() ? cps[end].second : text.size();
    pieces.emplace_back(text.substr(from, to - from));
    k = end;
  }
  return pieces;
}

struct Word {
  std::vector<int> syms;
  std::int64_t count = 0;
};

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b);
}

void count_pairs(const Word& w, std::int64_t sign,
                 std::unordered_map<std::uint64_t, std::int64_t>& counts) {
  for (std::size_t i = 0; i + 1 < w.syms.size(); ++i) {
    auto it = counts.try_emplace(pair_key(w.syms[i], w.syms[i + 1]), 0).first;
    it->second += sign * w.count;
    if (it->second == 0) counts.erase(it);
  }
}

// The most frequent pair; ties go to the smallest (a, b) so the result is deterministic.
std::uint64_t best_pair(const std::unordered_map<std::uint64_t, std::int64_t>& counts) {
  std::uint64_t best = 0;
  std::int64_t best_count = 0;
  for (const auto& [key, count] : counts) {
    if (count > best_count || (count == best_count && key < best)) {
      best = key;
      best_count = count;
    }
  }
  return best_count > 0 ? best : ~std::uint64_t{0};
}

void merge_in_word(Word& w, int a, int b, int merged) {
  std::vector<int> out;
  out.reserve(w.syms.size());
  for (std::size_t i = 0; i < w.syms.size(); ++i) {
    if (i + 1 < w.syms.size() && w.syms[i] == a && w.syms[i + 1] == b) {
      out.push_back(merged);
      ++i;
    } else {
      out.push_back(w.syms[i]);
    }
  }
  w.syms = std::move(out);
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int i = 0; i < 256; ++i)
      t[static_cast<std::size_t>(i)] = is_printable_byte(i) ? static_cast<char32_t>(i) : next++;
    return t;
  }();
  return table[b];
}

namespace {

// Training state: the corpus as distinct words (symbol ids and counts) and the live pair counts,
// updated only for the words a merge touches.
struct Trainer {
  BpeTokenizer tok;
  std::array<int, 256> byte_id{};
  std::unordered_map<std::string, int> id_of;
  std::vector<Word> words;
  std::unordered_map<std::uint64_t, std::int64_t> counts;

  void add_byte(int b) {
    byte_id[static_cast<std::size_t>(b)] = static_cast<int>(tok.vocab.size());
    std::string s;
    append_utf8(s, byte_to_unicode(static_cast<unsigned char>(b)));
    id_of.emplace(s, static_cast<int>(tok.vocab.size()));
    tok.vocab.push_back(std::move(s));
  }

  void load_words(std::string_view corpus) {
    std::map<std::string, std::int64_t> word_counts;  // ordered: deterministic word order
    for (auto& piece : pre_split(corpus)) ++word_counts[piece];
    for (const auto& [text, count] : word_counts) {
      Word w{.count = count};
      for (char c : text) w.syms.push_back(byte_id[static_cast<unsigned char>(c)]);
      count_pairs(w, +1, counts);
      words.push_back(std::move(w));
    }
  }

  // Merges the most frequent pair everywhere; false when no pair is left.
  bool merge_once() {
    const std::uint64_t key = best_pair(counts);
    if (key == ~std::uint64_t{0}) return false;
    const int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xFFFFFFFFu);
    const std::string& left = tok.vocab[static_cast<std::size_t>(a)];
    const std::string& right = tok.vocab[static_cast<std::size_t>(b)];
    tok.merges.emplace_back(left, right);
    // Two merge paths can spell the same string ("ab"+"c", "a"+"bc"): the token is reused.
    auto [it, inserted] = id_of.emplace(left + right, static_cast<int>(tok.vocab.size()));
    if (inserted) tok.vocab.push_back(it->first);
    for (Word& w : words) {
      bool has = false;
      for (std::size_t i = 0; i + 1 < w.syms.size() && !has; ++i) {
        has = w.syms[i] == a && w.syms[i + 1] == b;
      }
      if (!has) continue;
      count_pairs(w, -1, counts);
      merge_in_word(w, a, b, it->second);
      count_pairs(w, +1, counts);
    }
    return true;
  }
};

}  // namespace

BpeTokenizer train_bpe(std::string_view corpus, int bpe_vocab_size) {
  Trainer t;
  // Real Qwen/GPT-2 order: the printable bytes first, then the moved ones ("\n" is id 198).
  for (int b = 0; b < 256; ++b) {
    if (is_printable_byte(b)) t.add_byte(b);
  }
  for (int b = 0; b < 256; ++b) {
    if (!is_printable_byte(b)) t.add_byte(b);
  }
  t.load_words(corpus);
  while (static_cast<int>(t.tok.vocab.size()) < bpe_vocab_size && t.merge_once()) {
  }
  BpeTokenizer tok = std::move(t.tok);
  const auto base = static_cast<int>(tok.vocab.size());
  tok.added = {{"<|endoftext|>", true},     {"<|im_start|>", true},  {"<|im_end|>", true},
               {"<tool_call>", false},      {"</tool_call>", false}, {"<tool_response>", false},
               {"</tool_response>", false}, {"<think>", false},      {"</think>", false}};
  tok.ids = {.endoftext = base, .im_start = base + 1, .im_end = base + 2};
  return tok;
}

const BpeTokenizer& generated_tokenizer() {
  static const BpeTokenizer tok = train_bpe(kTrainingCorpus, 1000);
  return tok;
}

namespace {

// Llama 3.1/3.2's 256 added tokens, in id order from <|begin_of_text|>.
std::vector<AddedToken> llama3_added_tokens() {
  std::vector<AddedToken> out = {{"<|begin_of_text|>"},
                                 {"<|end_of_text|>"},
                                 {"<|reserved_special_token_0|>"},
                                 {"<|reserved_special_token_1|>"},
                                 {"<|finetune_right_pad_id|>"},
                                 {"<|reserved_special_token_2|>"},
                                 {"<|start_header_id|>"},
                                 {"<|end_header_id|>"},
                                 {"<|eom_id|>"},
                                 {"<|eot_id|>"},
                                 {"<|python_tag|>"}};
  for (int i = 3; out.size() < 256; ++i) {
    out.push_back({fmt::format("<|reserved_special_token_{}|>", i)});
  }
  return out;
}

// pad_to > 0 fills the BPE vocabulary with tokens no text encodes to: "<fill" + n + ">" is never
// one pre-tokenizer piece (letters and digits always split), so neither merges nor
// ignore_merges' whole-word lookup can produce it.
BpeTokenizer llama_tokenizer(int pad_to) {
  BpeTokenizer tok = generated_tokenizer();
  for (int i = 0; static_cast<int>(tok.vocab.size()) < pad_to; ++i) {
    tok.vocab.push_back(fmt::format("<fill{}>", i));
  }
  tok.added = llama3_added_tokens();
  const auto base = static_cast<int>(tok.vocab.size());
  tok.ids = {.begin_of_text = base, .end_of_text = base + 1, .eom = base + 8, .eot = base + 9};
  return tok;
}

}  // namespace

const BpeTokenizer& family_tokenizer(Family family, std::string_view preset) {
  if (family == Family::kGraniteHybrid || family == Family::kGraniteMoe) {
    return granite_tokenizer(preset);
  }
  if (family == Family::kNemotronH) return nemotron_h_tokenizer();
  if (family == Family::kFalconH1) return falcon_h1_tokenizer();
  if (family != Family::kLlama) return generated_tokenizer();
  if (preset == "llama-3.2-1b") {
    static const BpeTokenizer real = llama_tokenizer(128000);
    return real;
  }
  static const BpeTokenizer tiny = llama_tokenizer(0);
  return tiny;
}

namespace {

using OJson = nlohmann::ordered_json;

// Pre-tokenizer regexes of the real files (model-families.md section 9).
constexpr const char* kQwen3_5Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kLlama3Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen3Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

OJson byte_level() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}};
}

OJson bpe_model(const BpeTokenizer& tok) {
  OJson vocab = OJson::object();
  for (std::size_t i = 0; i < tok.vocab.size(); ++i) vocab[tok.vocab[i]] = i;
  OJson merges = OJson::array();
  for (const auto& [a, b] : tok.merges) merges.push_back({a, b});
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

OJson added_tokens(const BpeTokenizer& tok) {
  OJson added = OJson::array();
  for (std::size_t i = 0; i < tok.added.size(); ++i) {
    added.push_back({{"id", tok.vocab.size() + i},
                     {"content", tok.added[i].content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", tok.added[i].special}});
  }
  return added;
}

// Llama 3.1/3.2's tokenizer.json: no normalizer, merges as "a b" strings, ignore_merges, and a
// post-processor that puts <|begin_of_text|> first (add_special_tokens).
std::string llama_tokenizer_json(const BpeTokenizer& tok) {
  const std::string bos = tok.added.front().content;
  const OJson split = {{"type", "Split"},
                       {"pattern", {{"Regex", kLlama3Regex}}},
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
  OJson model = bpe_model(tok);
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["ignore_merges"] = true;
  OJson merges = OJson::array();
  for (const auto& [a, b] : tok.merges) merges.push_back(a + " " + b);
  model["merges"] = std::move(merges);
  const OJson j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens(tok)},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level_pre}}}},
      {"post_processor", post},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"model", std::move(model)}};
  return j.dump(2) + "\n";
}

// Llama-3.2-1B-Instruct's tokenizer_config.json, with Llama 3.1's chat template
// (docs/model-llama.md).
std::string llama_tokenizer_config_json(const BpeTokenizer& tok, int max_position) {
  OJson decoder = added_tokens_decoder_json(tok);
  const OJson j = {{"added_tokens_decoder", std::move(decoder)},
                   {"bos_token", "<|begin_of_text|>"},
                   {"chat_template", chat_template("llama3")},
                   {"clean_up_tokenization_spaces", true},
                   {"eos_token", "<|eot_id|>"},
                   {"model_input_names", {"input_ids", "attention_mask"}},
                   {"model_max_length", max_position},
                   {"tokenizer_class", "PreTrainedTokenizerFast"}};
  return j.dump(2) + "\n";
}

// Qwen3-MoE ships Qwen3's tokenizer: its pre-tokenizer pattern and its thinking chat template.
// Qwen3's byte-level BPE (vocab 151936): Qwen3-Next uses it too (spec 3.1).
bool qwen3_like(Family family) {
  return family == Family::kQwen3 || family == Family::kQwen3Moe || family == Family::kQwen3Next;
}

}  // namespace

std::string tokenizer_json(const BpeTokenizer& tok, Family family) {
  if (family == Family::kLlama) return llama_tokenizer_json(tok);
  if (family == Family::kGraniteHybrid || family == Family::kGraniteMoe ||
      family == Family::kNemotronH || family == Family::kFalconH1) {
    return granite_tokenizer_json(tok);
  }
  OJson added = OJson::array();
  for (std::size_t i = 0; i < tok.added.size(); ++i) {
    added.push_back({{"id", tok.vocab.size() + i},
                     {"content", tok.added[i].content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", tok.added[i].special}});
  }
  const OJson split = {{"type", "Split"},
                       {"pattern", {{"Regex", qwen3_like(family) ? kQwen3Regex : kQwen3_5Regex}}},
                       {"behavior", "Isolated"},
                       {"invert", false}};
  const OJson pre = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level()}}};
  const OJson j = {{"version", "1.0"},
                   {"truncation", nullptr},
                   {"padding", nullptr},
                   {"added_tokens", std::move(added)},
                   {"normalizer", {{"type", "NFC"}}},
                   {"pre_tokenizer", pre},
                   {"post_processor", byte_level()},
                   {"decoder", byte_level()},
                   {"model", bpe_model(tok)}};
  return j.dump(2) + "\n";
}

std::string tokenizer_config_json(const BpeTokenizer& tok, Family family, int max_position) {
  if (family == Family::kLlama) return llama_tokenizer_config_json(tok, max_position);
  if (family == Family::kGraniteHybrid || family == Family::kGraniteMoe) {
    return granite_tokenizer_config_json(tok, max_position);
  }
  if (family == Family::kNemotronH) return nemotron_h_tokenizer_config_json(tok, max_position);
  if (family == Family::kFalconH1) return falcon_h1_tokenizer_config_json(tok, max_position);
  OJson decoder = OJson::object();
  OJson extra = OJson::array();
  for (std::size_t i = 0; i < tok.added.size(); ++i) {
    const AddedToken& t = tok.added[i];
    decoder[std::to_string(tok.vocab.size() + i)] = {
        {"content", t.content}, {"lstrip", false},      {"normalized", false},
        {"rstrip", false},      {"single_word", false}, {"special", t.special}};
    if (t.special && t.content != "<|endoftext|>") extra.push_back(t.content);
  }
  const bool mamba = family == Family::kMamba2;
  const OJson j = {
      {"add_bos_token", false},
      {"add_prefix_space", false},
      {"added_tokens_decoder", std::move(decoder)},
      {"additional_special_tokens", std::move(extra)},
      {"bos_token", nullptr},
      {"chat_template", qwen3_like(family) ? chat_template("qwen3") : chat_template("qwen3_5")},
      {"clean_up_tokenization_spaces", false},
      {"eos_token", mamba ? "<|endoftext|>" : "<|im_end|>"},
      {"errors", "replace"},
      {"model_max_length", max_position > 0 ? max_position : 1048576},
      {"pad_token", "<|endoftext|>"},
      {"split_special_tokens", false},
      {"tokenizer_class", "Qwen2Tokenizer"},
      {"unk_token", nullptr}};
  return j.dump(2) + "\n";
}

}  // namespace recur::modelgen
