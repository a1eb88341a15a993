#include "app/commands.h"

namespace recur::app {

int cmd_bench(const config::Options&) {
  return not_available("bench", "the engine benchmarks are not built yet");
}

}  // namespace recur::app
