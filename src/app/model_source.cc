#include "app/model_source.h"

#include <cstdlib>
#include <filesystem>

#include "hub/pull.h"
#include "util/format.h"
#include "util/log.h"

namespace recur::app {

Result<std::string> resolve_model_dir(const std::string& model, const std::string& revision) {
  std::error_code ec;
  if (model.empty() || std::filesystem::exists(model, ec) || !hub::is_repo_id(model)) return model;
  RECUR_ASSIGN_OR_RETURN(hub::HubConfig config, hub::hub_config_from_env([](const char* name) {
                           return std::getenv(name);
                         }));
  RECUR_ASSIGN_OR_RETURN(hub::PullResult pulled,
                         hub::pull(config, {.repo_id = model, .revision = revision}));
  if (pulled.files_downloaded > 0) {
    log::info("downloaded {} ({} files, {}) into {}", model, pulled.files_downloaded,
              format_bytes(pulled.bytes_downloaded), pulled.snapshot.string());
  } else {
    log::info("{} at {}: {}", model, revision, pulled.snapshot.string());
  }
  return pulled.snapshot.string();
}

}  // namespace recur::app
