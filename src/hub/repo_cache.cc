#include "hub/repo_cache.h"

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

#include "hub/hub_config.h"

namespace recur::hub {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_readable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), R_OK) == 0;  // follows the symlink
}

}  // namespace

RepoCache::RepoCache(const std::string& cache_dir, std::string_view repo_id)
    : cache_dir_(cache_dir) {
  folder_ = "models--";
  for (char c : repo_id) {
    if (c == '/') {
      folder_ += "--";
    } else {
      folder_ += c;
    }
  }
  root_ = cache_dir_ / folder_;
}

fs::path RepoCache::blob(std::string_view etag) const { return root_ / "blobs" / etag; }
fs::path RepoCache::snapshot(std::string_view commit) const { return root_ / "snapshots" / commit; }
fs::path RepoCache::lock(std::string_view etag) const {
  return cache_dir_ / ".locks" / folder_ / (std::string(etag) + ".lock");
}

std::optional<std::string> RepoCache::read_ref(std::string_view revision) const {
  const fs::path p = root_ / "refs" / revision;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  std::string text = read_text(p);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  if (!is_commit_hash(text)) return std::nullopt;
  return text;
}

Status RepoCache::write_ref(std::string_view revision, std::string_view commit) const {
  const fs::path p = root_ / "refs" / revision;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec)
    return Error(StatusCode::kIo, "cannot create {}: {}", p.parent_path().string(), ec.message());
  if (read_ref(revision) == std::string(commit)) return Status::ok();
  const fs::path tmp = p.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;  // huggingface_hub writes the hash without a newline
    if (!out) return Error(StatusCode::kIo, "cannot write {}", tmp.string());
  }
  fs::rename(tmp, p, ec);
  if (ec) return Error(StatusCode::kIo, "cannot write {}: {}", p.string(), ec.message());
  return Status::ok();
}

Status RepoCache::link(std::string_view commit, std::string_view filename,
                       std::string_view etag) const {
  const fs::path target = snapshot(commit) / filename;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return Error(StatusCode::kIo, "cannot create {}: {}", target.parent_path().string(),
                 ec.message());
  }
  const fs::path relative = fs::relative(blob(etag), target.parent_path(), ec);
  if (ec || relative.empty()) {
    return Error(StatusCode::kIo, "cannot link {} to its blob", target.string());
  }
  const fs::path tmp = target.string() + ".link." + std::to_string(::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(relative, tmp, ec);
  if (ec)
    return Error(StatusCode::kIo, "cannot create the link {}: {}", tmp.string(), ec.message());
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error(StatusCode::kIo, "cannot create the link {}", target.string());
  }
  return Status::ok();
}

Result<fs::path> RepoCache::local_snapshot(std::string_view revision) const {
  std::string commit(revision);
  if (!is_commit_hash(revision)) {
    auto ref = read_ref(revision);
    if (!ref) {
      return Error(StatusCode::kNotFound, "revision '{}' was never downloaded into {}", revision,
                   root_.string());
    }
    commit = *ref;
  }
  const fs::path dir = snapshot(commit);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error(StatusCode::kNotFound, "no snapshot {} in the cache", dir.string());
  }
  RECUR_RETURN_IF_ERROR(check_model_files(dir));
  return dir;
}

Status check_model_files(const fs::path& dir) {
  for (const char* name : {"config.json", "tokenizer.json"}) {
    if (!is_readable_file(dir / name)) {
      return Error(StatusCode::kNotFound, "{} has no {}", dir.string(), name);
    }
  }
  const fs::path index = dir / "model.safetensors.index.json";
  if (is_readable_file(index)) {
    auto j = nlohmann::json::parse(read_text(index), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return Error(StatusCode::kDataLoss, "{}: no weight_map object", index.string());
    }
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : j["weight_map"].items()) {
      if (shard.is_string()) shards.insert(shard.get<std::string>());
    }
    for (const std::string& shard : shards) {
      if (!is_readable_file(dir / shard)) {
        return Error(StatusCode::kNotFound, "{} lacks the shard {} its index names", dir.string(),
                     shard);
      }
    }
    if (!shards.empty()) return Status::ok();
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".safetensors" && is_readable_file(entry.path())) {
      return Status::ok();
    }
  }
  return Error(StatusCode::kNotFound, "{} has no *.safetensors weights", dir.string());
}

}  // namespace recur::hub
