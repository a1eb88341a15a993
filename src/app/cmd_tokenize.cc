// recur tokenize: text on stdin to token ids (one line, space-separated; the count on stderr), or
// with
// --decode token ids on stdin back to text. What people reach for when a prompt looks wrong.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "app/commands.h"
#include "app/model_source.h"
#include "app/settings.h"
#include "tokenizer/tokenizer.h"

namespace recur::app {
namespace {

// Ids separated by anything that is not a digit or '-' (spaces, commas, brackets, newlines).
Result<std::vector<tokenizer::TokenId>> parse_ids(const std::string& text) {
  std::vector<tokenizer::TokenId> ids;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[pos])) && text[pos] != '-') {
      if (std::string_view(" \t\r\n,[]").find(text[pos]) == std::string_view::npos) {
        return Error(StatusCode::kInvalidArgument, "stdin: unexpected '{}' at byte {}", text[pos],
                     pos);
      }
      ++pos;
      continue;
    }
    std::size_t end = pos + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    std::string number = text.substr(pos, end - pos);
    if (number == "-" || number.size() > 10) {
      return Error(StatusCode::kInvalidArgument, "stdin: bad id '{}' at byte {}", number, pos);
    }
    long long id = std::stoll(number);
    if (id < INT32_MIN || id > INT32_MAX) {
      return Error(StatusCode::kInvalidArgument, "stdin: id {} out of range", number);
    }
    ids.push_back(static_cast<tokenizer::TokenId>(id));
    pos = end;
  }
  return ids;
}

}  // namespace

int cmd_tokenize(const TokenizeSettings& settings) {
  if (settings.model_dir.empty()) {
    std::fprintf(stderr, "recur tokenize: --model DIR is required\n");
    return kExitUsage;
  }
  auto dir = resolve_model_dir(settings.model_dir, settings.revision);
  if (!dir.is_ok()) {
    std::fprintf(stderr, "recur tokenize: %s\n", dir.status().message().c_str());
    return kExitFailure;
  }
  auto tok = tokenizer::Tokenizer::load_dir(*dir);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "recur tokenize: %s\n", tok.status().to_string().c_str());
    return kExitFailure;
  }
  std::string input(std::istreambuf_iterator<char>(std::cin), {});
  if (settings.decode) {
    auto ids = parse_ids(input);
    if (!ids.is_ok()) {
      std::fprintf(stderr, "recur tokenize: %s\n", ids.status().to_string().c_str());
      return kExitUsage;
    }
    std::string text = tok->decode(*ids);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  std::vector<tokenizer::TokenId> ids = tok->encode(input);
  std::string line;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    line += (i ? " " : "") + std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  std::fprintf(stderr, "%zu tokens\n", ids.size());
  return kExitOk;
}

}  // namespace recur::app
