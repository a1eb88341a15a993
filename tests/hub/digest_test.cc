// Checksums against known values: SHA-256 (LFS ETags) and git's blob SHA-1 (small files' ETags).
#include "hub/digest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace recur::hub {
namespace {

TEST(Digest, Sha256KnownAnswerFedInPieces) {
  Digest d(DigestKind::kSha256);
  d.update("a");
  d.update("");
  d.update("bc");
  EXPECT_EQ(d.hex_final(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Digest, FileDigestsMatchGitAndSha256sum) {
  const auto path = std::filesystem::temp_directory_path() / "recur_digest_test.txt";
  std::ofstream(path, std::ios::binary) << "hello\n";
  // `git hash-object` of the file and `sha256sum` of it.
  EXPECT_EQ(*file_digest(path.string(), DigestKind::kSha1),
            "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(*file_digest(path.string(), DigestKind::kSha256),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  std::filesystem::remove(path);
  EXPECT_FALSE(file_digest(path.string(), DigestKind::kSha256).is_ok());
}

}  // namespace
}  // namespace recur::hub
