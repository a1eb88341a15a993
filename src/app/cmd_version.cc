#include <fmt/format.h>

#include "app/commands.h"
#include "config/options.h"

#ifndef RECUR_VERSION
#define RECUR_VERSION "0.0.0"
#endif

namespace recur::app {

int cmd_version() {
  fmt::print("recur {}\n", RECUR_VERSION);
  fmt::print("compiler: {}\n", __VERSION__);
  return kExitOk;
}

int cmd_config_doc() {
  fmt::print("{}", config::render_env_markdown());
  return kExitOk;
}

}  // namespace recur::app
