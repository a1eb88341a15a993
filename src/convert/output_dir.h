// A checkpoint directory being written: the files go into a hidden temporary sibling of the
// target, which commit() renames onto it, so an interrupted run never leaves a half checkpoint
// that looks whole. Shared by the generator and quantize_checkpoint. Not thread-safe.
#pragma once

#include <filesystem>
#include <string>

#include "util/status.h"

namespace recur::convert {

class OutputDir {
 public:
  // Checks the target (it must not exist, or be an empty directory, or a previous checkpoint: a
  // directory holding config.json) and creates the temporary folder. flag names the target in
  // messages ("--out").
  static Result<OutputDir> begin(const std::string& out_dir, const std::string& flag = "--out");

  OutputDir(OutputDir&& other) noexcept;
  OutputDir& operator=(OutputDir&&) = delete;
  OutputDir(const OutputDir&) = delete;
  // Removes the temporary folder unless commit() succeeded.
  ~OutputDir();

  const std::filesystem::path& tmp() const { return tmp_; }
  const std::filesystem::path& target() const { return target_; }
  // Moves the finished temporary folder onto the target (an old checkpoint there is moved aside
  // first and removed after).
  Status commit();

 private:
  OutputDir(std::filesystem::path target, std::filesystem::path tmp)
      : target_(std::move(target)), tmp_(std::move(tmp)) {}

  std::filesystem::path target_;
  std::filesystem::path tmp_;
  bool committed_ = false;
};

}  // namespace recur::convert
