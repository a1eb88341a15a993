// Test helper for the oracle comparison (oracle_test.mjs): loads a tokenizer directory, encodes
// each string of a JSON array in every mode and writes the ids, decodes and streamed decodes.
// Usage: tok_dump TOKENIZER_DIR INPUT.json OUTPUT.json
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "util/mmap_file.h"

using recur::tokenizer::EncodeOptions;
using recur::tokenizer::TokenId;
using recur::tokenizer::Tokenizer;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tok_dump TOKENIZER_DIR INPUT.json OUTPUT.json\n");
    return 2;
  }
  auto tok = Tokenizer::load_dir(argv[1]);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto input = recur::read_file(argv[2]);
  if (!input.is_ok()) return 1;
  auto texts = nlohmann::json::parse(*input, nullptr, false);
  if (texts.is_discarded() || !texts.is_array()) return 1;
  nlohmann::json out = {{"encode", nlohmann::json::array()},
                        {"encode_nospecial", nlohmann::json::array()},
                        {"encode_addspecial", nlohmann::json::array()},
                        {"decode", nlohmann::json::array()},
                        {"decode_skip", nlohmann::json::array()},
                        {"stream", nlohmann::json::array()}};
  for (const auto& t : texts) {
    std::string text = t.get<std::string>();
    std::vector<TokenId> ids = tok->encode(text, EncodeOptions{.parse_special = true});
    out["encode"].push_back(ids);
    out["encode_nospecial"].push_back(tok->encode(text, EncodeOptions{.parse_special = false}));
    out["encode_addspecial"].push_back(
        tok->encode(text, EncodeOptions{.parse_special = true, .add_special_tokens = true}));
    out["decode"].push_back(tok->decode(ids));
    out["decode_skip"].push_back(tok->decode(ids, /*skip_special=*/true));
    recur::tokenizer::StreamingDetokenizer stream(*tok);
    std::string streamed;
    for (TokenId id : ids) streamed += stream.push(id);
    out["stream"].push_back(streamed + stream.finish());
  }
  auto st = recur::write_file_atomic(
      argv[3], out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
