// recur: dispatch to a subcommand, parse its options from the table, set up logging, run it.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "app/commands.h"
#include "app/settings.h"
#include "config/options.h"
#include "util/log.h"

namespace {

using recur::app::Command;

void print_usage() {
  std::string out =
      "Usage: recur COMMAND [OPTIONS]\n\n"
      "An LLM inference server whose prompt cache makes every follow-up turn cost only its new\n"
      "tokens.\n\nCommands:\n";
  for (const auto& c : recur::app::all_commands()) {
    if (!c.hidden) out += fmt::format("  {:<12} {}\n", c.name, c.summary);
  }
  out += "\nRun 'recur COMMAND --help' for a command's options.\n";
  fmt::print("{}", out);
}

const Command* find_command(std::string_view name) {
  for (const auto& c : recur::app::all_commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recur;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage();
    return args.empty() ? app::kExitUsage : app::kExitOk;
  }
  if (args[0] == "--version") args[0] = "version";
  const Command* cmd = find_command(args[0]);
  if (cmd == nullptr) {
    fmt::print(stderr, "recur: unknown command '{}' (run 'recur --help' for the list)\n", args[0]);
    return app::kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& a : rest) {
    if (a == "--help" || a == "-h") {
      fmt::print("{}", config::render_help(cmd->name, cmd->summary, cmd->scope));
      return app::kExitOk;
    }
    if (a == "--") break;
  }
  auto opts = config::parse_options(cmd->scope, rest, config::process_env());
  if (!opts) {
    fmt::print(stderr, "recur {}: {}\n", cmd->name, opts.status().message());
    return app::kExitUsage;
  }
  if (opts->positional().size() > cmd->max_positional) {
    fmt::print(stderr, "recur {}: unexpected argument '{}' (see --help)\n", cmd->name,
               opts->positional()[cmd->max_positional]);
    return app::kExitUsage;
  }
  log::set_level(app::read_log_settings(*opts).level);
  return cmd->run(*opts);
}
