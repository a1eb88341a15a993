#include "app/commands.h"

namespace recur::app {

int cmd_make_model(const config::Options&) {
  return not_available("make-model", "the checkpoint generator is not built yet");
}

}  // namespace recur::app
