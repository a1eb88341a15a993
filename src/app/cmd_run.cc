#include "app/commands.h"

namespace recur::app {

int cmd_run(const config::Options&) {
  return not_available("run", "the inference engine is not built yet");
}

}  // namespace recur::app
