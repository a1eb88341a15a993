// One repository's folder in the Hugging Face cache, laid out as huggingface_hub lays it out:
//   HF_HUB_CACHE/models--ORG--NAME/
//     blobs/ETAG               file contents, named by the Hub's ETag (sha256 of an LFS file, git
//                              sha1 of a small one); ETAG.incomplete while downloading
//     refs/REVISION            the commit a branch or tag pointed at when last resolved
//     snapshots/COMMIT/FILE    relative symlinks into ../../blobs
// so a model downloaded by Python tools is found here and ours is found by them. A snapshot
// file links only to a complete, verified blob.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::hub {

class RepoCache {
 public:
  RepoCache(const std::string& cache_dir, std::string_view repo_id);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(std::string_view etag) const;
  std::filesystem::path snapshot(std::string_view commit) const;
  // The lock file huggingface_hub takes around a blob's download (CACHE/.locks/REPO/ETAG.lock).
  std::filesystem::path lock(std::string_view etag) const;

  // The commit REVISION pointed at when last resolved; nullopt when never resolved.
  std::optional<std::string> read_ref(std::string_view revision) const;
  Status write_ref(std::string_view revision, std::string_view commit) const;

  // snapshots/COMMIT/FILENAME -> ../../blobs/ETAG (more ../ for files in subfolders), replacing
  // what was there; atomic (a symlink at a temporary name renamed over the target).
  Status link(std::string_view commit, std::string_view filename, std::string_view etag) const;

  // The snapshot of REVISION (a commit hash, or a branch or tag through refs/) if it holds a
  // complete model; otherwise the reason it does not.
  Result<std::filesystem::path> local_snapshot(std::string_view revision) const;

 private:
  std::filesystem::path cache_dir_;
  std::string folder_;  // models--ORG--NAME
  std::filesystem::path root_;
};

// Whether DIR holds what recur loads: config.json, tokenizer.json and the weights (every shard
// model.safetensors.index.json names, or at least one *.safetensors), each a readable file (a
// snapshot link to a missing blob is not). The error names what is missing.
Status check_model_files(const std::filesystem::path& dir);

}  // namespace recur::hub
