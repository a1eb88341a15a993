// File operations of the disk tier: write one entry crash-safely (temp file, fdatasync, rename,
// directory fsync), read an entry's header and tokens without its payload, read and verify a
// payload, list a model directory. Blocking calls for the tier's own threads; no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cache/disk_format.h"
#include "util/status.h"

namespace recur::cache {

// An entry as the index knows it: its header, its tokens (read and checked against the header's
// tokens hash) and its path relative to the model directory.
struct DiskEntryHead {
  DiskHeader header;
  std::vector<Token> tokens;
  std::string rel_path;
  std::int64_t mtime_ns = 0;
};

// Writes header + tokens + payload to `root/rel_path`: to a temp file named for this host, process
// and `temp_seq` first, then fdatasync, rename over the final name (atomic: a reader sees the old
// complete file or the new one) and fsync of the directory. Creates the directories it needs.
Status write_entry_file(const std::string& root, const std::string& rel_path,
                        const DiskHeader& header, TokenSpan tokens,
                        std::span<const std::uint8_t> payload, std::uint64_t temp_seq);

// Reads the header and tokens only. kDataLoss: corrupt, torn or truncated (the message says
// which field or byte count); kNotFound: the file is gone; kIo: the system refused.
Result<DiskEntryHead> read_entry_head(const std::string& root, const std::string& rel_path);

// A payload is read, hashed and copied out in pieces of this size (small enough to stay in L2).
inline constexpr std::size_t kDiskReadChunkBytes = std::size_t{256} << 10;

// Reads the payload of the file now at `root/rel_path`, whose header must still describe the
// same entry as `expected` (same key and tokens), and checks it against the payload hash.
Result<std::vector<std::uint8_t>> read_entry_payload(const std::string& root,
                                                     const std::string& rel_path,
                                                     const DiskHeader& expected);

// Unlinks; a file that is already gone is not an error.
Status remove_entry_file(const std::string& root, const std::string& rel_path);

struct DiskListing {
  std::vector<std::string> entries;  // *.rpc, relative to the root
  std::vector<std::string> temps;    // leftover temp files, relative to the root
};
// Entry and temp files of every session directory under `root` (partition/session/file).
DiskListing list_entry_files(const std::string& root);
// The same for one session directory ("partition/session").
DiskListing list_session_files(const std::string& root, const std::string& session_dir);

// Whether a temp file was left by a writer that is gone: one of this host whose process has
// exited, or any older than `stale_after_ns` (another host's writer cannot be asked).
bool is_abandoned_temp(const std::string& root, const std::string& rel_path,
                       std::int64_t stale_after_ns);

// Removes empty session and partition directories left by deletes (best effort).
void prune_empty_dirs(const std::string& root, const std::string& rel_path);

}  // namespace recur::cache
