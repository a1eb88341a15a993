// The prompt cache's file format on disk: one file per entry, a fixed 128-byte header (key
// hashes, sizes, the hash of the token vector and a checksum of the payload, then a checksum of
// the header itself), the token vector, then the snapshot payload. Also where a file lives:
// DIR/v1-<model>/<partition>/<session>/<name>.rpc. Pure functions; no I/O here.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "cache/keys.h"
#include "util/status.h"

namespace recur::cache {

inline constexpr std::size_t kDiskHeaderBytes = 128;
inline constexpr std::uint32_t kDiskFormatVersion = 1;
inline constexpr std::string_view kDiskMagic = "RECURPC\x01";
inline constexpr std::string_view kDiskEntrySuffix = ".rpc";
// Temp files are named ".tmp-<host>-<pid>-<n>" in the entry's directory until the rename.
inline constexpr std::string_view kDiskTempPrefix = ".tmp-";

// Which store an entry belongs to (its lookup rule).
enum class DiskKind : std::uint8_t { kPrefix = 0, kSnapshot = 1 };

struct DiskHeader {
  std::uint64_t model = 0;      // SnapshotCodec::model_signature()
  std::uint64_t partition = 0;  // partition_hash(): tenant + bucket
  std::uint64_t session = 0;    // session_hash()
  DiskKind kind = DiskKind::kSnapshot;
  Origin origin = Origin::kCompletion;
  bool truncatable = false;
  std::int64_t n_tokens = 0;
  std::int64_t payload_bytes = 0;
  std::uint64_t tokens_hash = 0;   // hash64 of the token vector's bytes
  std::uint64_t payload_hash = 0;  // hash64 of the payload
  std::int64_t created_unix_ns = 0;

  // The whole file: header, tokens, payload.
  std::int64_t file_bytes() const;
  std::int64_t payload_offset() const;
  bool operator==(const DiskHeader&) const = default;
};

std::array<std::uint8_t, kDiskHeaderBytes> encode_disk_header(const DiskHeader& header);
// Checks the magic, the version, the header checksum, every field's range, and that the file is
// exactly as long as the header says (a torn or truncated file is not). The error names the
// first field that is wrong and where it is.
Result<DiskHeader> decode_disk_header(std::span<const std::uint8_t> bytes, std::int64_t file_bytes);

// Stable hashes of the key parts (the directory and file names, and the header fields).
std::uint64_t partition_hash(const PartitionKey& key);
std::uint64_t session_hash(const SessionKey& key);
std::uint64_t tokens_hash(TokenSpan tokens);

// "v1-<model as 16 hex digits>": the only directory a server with this model reads.
std::string disk_model_dir(std::uint64_t model);
// "<partition>/<session>/<kind><origin>-<n_tokens>-<tokens hash>.rpc", relative to the model
// directory: the same entry gets the same name on every replica, so concurrent writers of one
// key replace each other's complete files and never mix bytes.
std::string disk_entry_path(const DiskHeader& header);
std::string disk_session_dir(std::uint64_t partition, std::uint64_t session);

}  // namespace recur::cache
