// Downloads a model repository from the Hugging Face Hub into the shared cache (repo_cache.h):
// its config, tokenizer, chat template and safetensors weights, nothing else. Resumes cut
// downloads (Range on the blob's .incomplete file), checks every file against the checksum the
// Hub names (sha256 of LFS files, git sha1 of small ones), and links the snapshot only once all
// its files are complete, so a cut download never leaves a snapshot that looks complete. With
// HF_HUB_OFFLINE, or when the Hub cannot be reached, a complete cached snapshot is used as is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "hub/hub_config.h"
#include "util/status.h"

namespace recur::hub {

struct PullRequest {
  std::string repo_id;            // "org/name"
  std::string revision = "main";  // a branch, tag or commit hash
};

struct PullResult {
  std::filesystem::path snapshot;  // the directory to load
  std::string commit;
  int files_downloaded = 0;
  std::int64_t bytes_downloaded = 0;
  bool from_cache_only = false;  // no request was made or the Hub was unreachable
};

Result<PullResult> pull(const HubConfig& config, const PullRequest& request);

// Whether a file of the repository is one recur downloads: top-level config, tokenizer and
// template files and safetensors weights (the shards themselves are narrowed by the index).
bool is_wanted_file(std::string_view name);

}  // namespace recur::hub
