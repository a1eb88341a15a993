// Checksums of downloaded files: SHA-256 (an LFS file's ETag on the Hub) and git's blob SHA-1 (a
// small file's ETag), fed incrementally so a multi-gigabyte download is hashed as it arrives.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace recur::hub {

enum class DigestKind : std::uint8_t { kSha256, kSha1 };

class Digest {
 public:
  explicit Digest(DigestKind kind);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(std::string_view bytes);
  // Lowercase hex; the digest cannot be updated afterwards.
  std::string hex_final();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The SHA-256 of a file's contents, or of git's blob object ("blob SIZE\0" + contents) for kSha1.
Result<std::string> file_digest(const std::string& path, DigestKind kind);

}  // namespace recur::hub
