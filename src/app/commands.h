// recur's subcommands. Each is a function from its typed settings (app/settings.h, read from the
// parsed options by the command table) to an exit code; the dispatch, --help and option parsing
// around them are in main.cc.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "app/settings.h"
#include "config/options.h"

namespace recur::app {

struct Command {
  std::string_view name;
  std::string_view summary;
  std::uint32_t scope;                      // config::Scope bits: which options the command takes
  int (*run)(const config::Options& opts);  // reads the command's settings and runs it
  bool hidden = false;                      // not listed in the top-level help (developer tools)
  std::size_t max_positional = 0;           // arguments that are not flags (`pull NAME`)
};

std::span<const Command> all_commands();

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and failed (bad checkpoint, I/O)
inline constexpr int kExitUsage = 2;    // bad flags or environment, or not available

// Each subcommand, defined in its own cmd_*.cc.
int cmd_serve(const ServeSettings& settings);
int cmd_run(const RunSettings& settings);
int cmd_bench(const BenchSettings& settings);
int cmd_make_model(const MakeModelSettings& settings);
int cmd_quantize(const QuantizeSettings& settings);
int cmd_pull(const PullSettings& settings);
int cmd_tokenize(const TokenizeSettings& settings);
int cmd_template(const TemplateSettings& settings);
int cmd_version();
int cmd_config_doc();

// For subcommands whose module has not landed yet: says so and returns kExitUsage.
int not_available(std::string_view command, std::string_view what_is_missing);

}  // namespace recur::app
