#include "config/option.h"

#include <fmt/format.h>

#include <cctype>

namespace recur::config {

const char* source_name(Source s) {
  switch (s) {
    case Source::kDefault:
      return "default";
    case Source::kEnv:
      return "env";
    case Source::kCli:
      return "cli";
  }
  return "?";
}

std::string env_name(std::string_view option_name) {
  std::string out = "RECUR_";
  for (char c : option_name) {
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

const char* type_name(OptionType t) {
  switch (t) {
    case OptionType::kBool:
      return "bool";
    case OptionType::kInt:
      return "int";
    case OptionType::kFloat:
      return "number";
    case OptionType::kSize:
      return "size";
    case OptionType::kDuration:
      return "duration";
    case OptionType::kEnum:
      return "enum";
    case OptionType::kString:
      return "string";
    case OptionType::kPath:
      return "path";
  }
  return "?";
}

namespace {
std::string number_text(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) {
    return fmt::format("{}", static_cast<long long>(v));
  }
  return fmt::format("{}", v);
}
}  // namespace

std::string allowed_text(const OptionSpec& spec) {
  std::string auto_part = spec.allow_auto ? " or auto" : "";
  switch (spec.type) {
    case OptionType::kBool:
      return "true/false, 1/0, yes/no or on/off";
    case OptionType::kInt:
      return fmt::format("an integer from {} to {}{}", number_text(spec.min), number_text(spec.max),
                         auto_part);
    case OptionType::kFloat:
      return fmt::format("a number from {} to {}{}", number_text(spec.min), number_text(spec.max),
                         auto_part);
    case OptionType::kSize:
      return fmt::format("a size from {} to {} bytes, like 512MiB or 2GiB{}", number_text(spec.min),
                         number_text(spec.max), auto_part);
    case OptionType::kDuration:
      return fmt::format("a duration from {}ms to {}ms, like 250ms, 30s, 5m or 2h{}",
                         number_text(spec.min), number_text(spec.max), auto_part);
    case OptionType::kEnum: {
      std::string words;
      for (auto c : spec.choices) words += (words.empty() ? "" : "|") + std::string(c);
      return "one of " + words;
    }
    case OptionType::kString:
      return "any text";
    case OptionType::kPath:
      return "a path";
  }
  return "";
}

}  // namespace recur::config
