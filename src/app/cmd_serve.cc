#include "app/commands.h"

namespace recur::app {

int cmd_serve(const config::Options&) {
  return not_available("serve", "the HTTP server and engine loop are not built yet");
}

}  // namespace recur::app
