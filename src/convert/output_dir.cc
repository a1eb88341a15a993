// Target checks, the temporary folder and the final rename of a checkpoint being written.
#include "convert/output_dir.h"

#include <fmt/format.h>
#include <unistd.h>

namespace recur::convert {

namespace fs = std::filesystem;

namespace {

// Refuses to replace a directory that holds something other than a checkpoint.
Status check_target(const fs::path& out, const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return Status::ok();
  if (!fs::is_directory(out, ec)) {
    return Error(StatusCode::kInvalidArgument, "{} {} exists and is not a directory", flag,
                 out.string());
  }
  if (fs::is_empty(out, ec) || fs::exists(out / "config.json", ec)) return Status::ok();
  return Error(StatusCode::kInvalidArgument,
               "{} {} is a non-empty directory without config.json; refusing to replace it", flag,
               out.string());
}

}  // namespace

Result<OutputDir> OutputDir::begin(const std::string& out_dir, const std::string& flag) {
  if (out_dir.empty()) return Error(StatusCode::kInvalidArgument, "no output directory given");
  std::error_code ec;
  fs::path out = fs::absolute(fs::path(out_dir), ec).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  RECUR_RETURN_IF_ERROR(check_target(out, flag));
  fs::create_directories(out.parent_path(), ec);
  if (ec) {
    return Error(StatusCode::kIo, "creating {}: {}", out.parent_path().string(), ec.message());
  }
  fs::path tmp = out.parent_path() / fmt::format(".{}.tmp-{}", out.filename().string(), ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return Error(StatusCode::kIo, "creating {}: {}", tmp.string(), ec.message());
  return OutputDir(std::move(out), std::move(tmp));
}

OutputDir::OutputDir(OutputDir&& other) noexcept
    : target_(std::move(other.target_)), tmp_(std::move(other.tmp_)), committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object owns nothing
}

OutputDir::~OutputDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

Status OutputDir::commit() {
  std::error_code ec;
  const fs::path old =
      target_.parent_path() / fmt::format(".{}.old-{}", target_.filename().string(), ::getpid());
  const bool had_old = fs::exists(target_, ec);
  if (had_old) {
    fs::rename(target_, old, ec);
    if (ec) return Error(StatusCode::kIo, "moving {} aside: {}", target_.string(), ec.message());
  }
  fs::rename(tmp_, target_, ec);
  if (ec) {
    return Error(StatusCode::kIo, "renaming {} to {}: {}", tmp_.string(), target_.string(),
                 ec.message());
  }
  committed_ = true;
  if (had_old) fs::remove_all(old, ec);
  return Status::ok();
}

}  // namespace recur::convert
