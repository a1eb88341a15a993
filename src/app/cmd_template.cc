#include "app/commands.h"

namespace recur::app {

int cmd_template(const config::Options&) {
  return not_available("template", "the chat template engine is not built yet");
}

}  // namespace recur::app
