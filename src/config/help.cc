// --help text and docs/environment-variables.md, both rendered from the option table.
#include <fmt/format.h>

#include <vector>

#include "config/options.h"
#include "config/options_table.h"

namespace recur::config {
namespace {

std::string metavar(const OptionSpec& spec) {
  switch (spec.type) {
    case OptionType::kBool:
      return "";
    case OptionType::kInt:
      return " N";
    case OptionType::kFloat:
      return " X";
    case OptionType::kSize:
      return " BYTES";
    case OptionType::kDuration:
      return " TIME";
    case OptionType::kEnum:
      return " WORD";
    case OptionType::kString:
      return " TEXT";
    case OptionType::kPath:
      return " PATH";
  }
  return "";
}

std::string flag_text(const OptionSpec& spec) {
  std::string out = spec.short_flag ? fmt::format("-{}, ", spec.short_flag) : "    ";
  out += fmt::format("--{}{}", spec.name, metavar(spec));
  if (spec.type == OptionType::kBool) out += fmt::format(" | --no-{}", spec.name);
  return out;
}

std::string default_shown(const OptionSpec& spec) {
  return spec.default_text.empty() ? "unset" : std::string(spec.default_text);
}

// Groups in first-appearance order, so the table's order is the help's order.
std::vector<std::string_view> groups_of(std::uint32_t scope) {
  std::vector<std::string_view> groups;
  for (const auto& spec : all_options()) {
    if ((spec.scopes & scope) == 0) continue;
    bool seen = false;
    for (auto g : groups) seen = seen || g == spec.group;
    if (!seen) groups.push_back(spec.group);
  }
  return groups;
}

}  // namespace

std::string render_help(std::string_view command, std::string_view summary, std::uint32_t scope) {
  std::string out = fmt::format("Usage: recur {} [OPTIONS]\n\n{}\n", command, summary);
  for (auto group : groups_of(scope)) {
    out += fmt::format("\n{}:\n", group);
    for (const auto& spec : all_options()) {
      if ((spec.scopes & scope) == 0 || spec.group != group) continue;
      out += fmt::format("  {}\n        {}\n        [default: {}] [env: {}]", flag_text(spec),
                         spec.help, default_shown(spec), env_name(spec.name));
      if (spec.type == OptionType::kEnum) out += fmt::format(" [{}]", allowed_text(spec));
      out += "\n";
    }
  }
  out += "\n  -h, --help\n        Show this help.\n";
  out += "\nCommand-line flags beat environment variables; environment variables beat defaults.\n";
  return out;
}

std::string render_env_markdown() {
  std::string out =
      "# Environment variables and flags\n\n"
      "<!-- Generated from src/config/options_table.cc by `recur config-doc`; a test fails when "
      "they differ. -->\n\n"
      "Every option of recur is a command-line flag and a `RECUR_*` environment variable. "
      "A flag beats the variable; the variable beats the default. An invalid value in either "
      "stops startup with one line naming the flag, the variable, the value and what is "
      "allowed.\n\n"
      "Value syntax: booleans take `true/false`, `1/0`, `yes/no`, `on/off` (a bare flag means "
      "true, `--no-NAME` false); sizes take plain bytes or `KiB`, `MiB`, `GiB`, `TiB` (powers of "
      "1024) and `kB`, `MB`, `GB`, `TB` (powers of 1000); durations take `ms`, `s`, `m`, `h`, `d` "
      "or plain seconds; `auto` (where allowed) means the value is chosen from the model and the "
      "machine at startup.\n";
  for (auto group : groups_of(kAllScopes)) {
    out += fmt::format("\n## {}\n\n", group);
    out += "| flag | variable | type | default | commands | meaning |\n";
    out += "|---|---|---|---|---|---|\n";
    for (const auto& spec : all_options()) {
      if (spec.group != group) continue;
      std::string commands;
      const std::pair<Scope, const char*> names[] = {
          {kServe, "serve"},          {kRun, "run"},           {kBench, "bench"},
          {kMakeModel, "make-model"}, {kTokenize, "tokenize"}, {kTemplate, "template"},
          {kQuantize, "quantize"},    {kPull, "pull"}};
      for (auto [bit, name] : names) {
        if (spec.scopes & bit) commands += (commands.empty() ? "" : ", ") + std::string(name);
      }
      std::string flag = fmt::format("`--{}`", spec.name);
      if (spec.short_flag) flag += fmt::format(", `-{}`", spec.short_flag);
      std::string type = type_name(spec.type);
      if (spec.type == OptionType::kEnum) type = allowed_text(spec);
      if (spec.type == OptionType::kInt || spec.type == OptionType::kSize ||
          spec.type == OptionType::kDuration || spec.type == OptionType::kFloat) {
        type = allowed_text(spec);
      }
      if (spec.repeatable) type = "comma list (flag may repeat)";
      out += fmt::format("| {} | `{}` | {} | `{}` | {} | {} |\n", flag, env_name(spec.name), type,
                         default_shown(spec), commands, spec.help);
    }
  }
  return out;
}

}  // namespace recur::config
