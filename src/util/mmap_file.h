// Read-only memory mapping of a whole file (checkpoint weights stay mapped, never copied).
// Thread-safe to read once constructed; move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "util/status.h"

namespace recur {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

// Tells the kernel this process no longer needs the whole pages inside [data, data + n_bytes) of a
// read-only file mapping: they leave its resident set (a later read maps them in again).
void drop_mapped_pages(const void* data, std::size_t n_bytes);

// Reads a whole (small) file into a string: config.json, tokenizer.json, templates.
Result<std::string> read_file(const std::string& path);
// Writes a file atomically (temp file + rename) so readers never see a partial file.
Status write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace recur
