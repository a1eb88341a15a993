// recur pull ORG/NAME: downloads a model from the Hugging Face Hub into the cache Python tools
// share (hub/pull.h) and prints the snapshot directory, which -m also accepts.
#include <fmt/format.h>

#include <cstdlib>

#include "app/commands.h"
#include "app/settings.h"
#include "hub/pull.h"
#include "util/format.h"
#include "util/log.h"

namespace recur::app {

int cmd_pull(const PullSettings& settings) {
  if (settings.repo_id.empty()) {
    log::error("recur pull: name a model: recur pull ORG/NAME (e.g. Qwen/Qwen3.5-0.8B)");
    return kExitUsage;
  }
  auto config = hub::hub_config_from_env([](const char* name) { return std::getenv(name); });
  if (!config.is_ok()) {
    log::error("recur pull: {}", config.status().message());
    return kExitUsage;
  }
  auto pulled = hub::pull(*config, {.repo_id = settings.repo_id, .revision = settings.revision});
  if (!pulled.is_ok()) {
    log::error("recur pull: {}", pulled.status().message());
    return pulled.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (pulled->files_downloaded > 0) {
    log::info("downloaded {} files ({}) of {} at {}", pulled->files_downloaded,
              format_bytes(pulled->bytes_downloaded), settings.repo_id, pulled->commit);
  } else {
    log::info("{} at {} is complete in the cache{}", settings.repo_id, pulled->commit,
              pulled->from_cache_only ? " (no request made)" : "");
  }
  fmt::print("{}\n", pulled->snapshot.string());
  return kExitOk;
}

}  // namespace recur::app
