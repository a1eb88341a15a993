#include "app/commands.h"

#include <cstdio>
#include <vector>

#include "util/log.h"

namespace recur::app {

std::span<const Command> all_commands() {
  using namespace config;
  // Each command's settings are read here, by the reader of its settings struct.
  static const std::vector<Command> commands = {
      {"serve", "Serve the OpenAI-compatible HTTP API for one model.", kServe,
       [](const Options& o) { return cmd_serve(read_serve_settings(o)); }},
      {"run", "Generate a completion for one prompt and print tokens per second.", kRun,
       [](const Options& o) { return cmd_run(read_run_settings(o)); }},
      {"bench", "Measure this machine's ceilings and the engine's throughput against them.", kBench,
       [](const Options& o) { return cmd_bench(read_bench_settings(o)); }},
      {"make-model", "Write a Hugging Face checkpoint directory with random weights.", kMakeModel,
       [](const Options& o) { return cmd_make_model(read_make_model_settings(o)); }},
      {"quantize", "Write an MLX affine-quantized (4/8-bit) copy of a checkpoint.", kQuantize,
       [](const Options& o) { return cmd_quantize(read_quantize_settings(o)); }},
      {"pull", "Download a model from the Hugging Face Hub into its cache: recur pull ORG/NAME.",
       kPull, [](const Options& o) { return cmd_pull(read_pull_settings(o)); },
       /*hidden=*/false, /*max_positional=*/1},
      {"tokenize", "Tokenize stdin with a checkpoint's tokenizer (--decode for the reverse).",
       kTokenize, [](const Options& o) { return cmd_tokenize(read_tokenize_settings(o)); }},
      {"template", "Render a chat through a checkpoint's chat template.", kTemplate,
       [](const Options& o) { return cmd_template(read_template_settings(o)); }},
      {"version", "Print the version and build information.", kMeta,
       [](const Options&) { return cmd_version(); }},
      {"config-doc", "Print docs/environment-variables.md, generated from the option table.", kMeta,
       [](const Options&) { return cmd_config_doc(); }, /*hidden=*/true},
  };
  return commands;
}

int not_available(std::string_view command, std::string_view what_is_missing) {
  log::error("recur {}: not available in this build yet: {}", command, what_is_missing);
  return kExitUsage;
}

}  // namespace recur::app
