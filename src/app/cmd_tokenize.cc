#include "app/commands.h"

namespace recur::app {

int cmd_tokenize(const config::Options&) {
  return not_available("tokenize", "the tokenizer is not built yet");
}

}  // namespace recur::app
