// recur's subcommands. Each is a function from parsed options to an exit code; the dispatch,
// --help and option parsing around them are in main.cc.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "config/options.h"

namespace recur::app {

struct Command {
  std::string_view name;
  std::string_view summary;
  std::uint32_t scope;  // config::Scope bits: which options the command takes
  int (*run)(const config::Options& opts);
  bool hidden = false;  // not listed in the top-level help (developer tools)
};

std::span<const Command> all_commands();

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and failed (bad checkpoint, I/O)
inline constexpr int kExitUsage = 2;    // bad flags or environment, or not available

// Each subcommand, defined in its own cmd_*.cc.
int cmd_serve(const config::Options& opts);
int cmd_run(const config::Options& opts);
int cmd_bench(const config::Options& opts);
int cmd_make_model(const config::Options& opts);
int cmd_tokenize(const config::Options& opts);
int cmd_template(const config::Options& opts);
int cmd_version(const config::Options& opts);
int cmd_config_doc(const config::Options& opts);

// For subcommands whose module has not landed yet: says so and returns kExitUsage.
int not_available(std::string_view command, std::string_view what_is_missing);

}  // namespace recur::app
