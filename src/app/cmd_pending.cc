// Subcommands whose modules have not landed yet. Each moves to its own cmd_*.cc when it does.
#include "app/commands.h"

namespace recur::app {

int cmd_serve(const config::Options&) {
  return not_available("serve", "the HTTP server and engine loop are not built yet");
}
int cmd_run(const config::Options&) {
  return not_available("run", "the inference engine is not built yet");
}
int cmd_bench(const config::Options&) {
  return not_available("bench", "the engine benchmarks are not built yet");
}
int cmd_make_model(const config::Options&) {
  return not_available("make-model", "the checkpoint generator is not built yet");
}
int cmd_tokenize(const config::Options&) {
  return not_available("tokenize", "the tokenizer is not built yet");
}
int cmd_template(const config::Options&) {
  return not_available("template", "the chat template engine is not built yet");
}

}  // namespace recur::app
