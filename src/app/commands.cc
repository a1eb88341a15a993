#include "app/commands.h"

#include <cstdio>
#include <vector>

#include "util/log.h"

namespace recur::app {

std::span<const Command> all_commands() {
  using namespace config;
  static const std::vector<Command> commands = {
      {"serve", "Serve the OpenAI-compatible HTTP API for one model.", kServe, cmd_serve},
      {"run", "Generate a completion for one prompt and print tokens per second.", kRun, cmd_run},
      {"bench", "Measure this machine's ceilings and the engine's throughput against them.", kBench,
       cmd_bench},
      {"make-model", "Write a Hugging Face checkpoint directory with random weights.", kMakeModel,
       cmd_make_model},
      {"tokenize", "Tokenize stdin with a checkpoint's tokenizer (--decode for the reverse).",
       kTokenize, cmd_tokenize},
      {"template", "Render a chat through a checkpoint's chat template.", kTemplate, cmd_template},
      {"version", "Print the version and build information.", kMeta, cmd_version},
      {"config-doc", "Print docs/environment-variables.md, generated from the option table.", kMeta,
       cmd_config_doc, /*hidden=*/true},
  };
  return commands;
}

int not_available(std::string_view command, std::string_view what_is_missing) {
  log::error("recur {}: not available in this build yet: {}", command, what_is_missing);
  return kExitUsage;
}

}  // namespace recur::app
