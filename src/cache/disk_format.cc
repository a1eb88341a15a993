#include "cache/disk_format.h"

#include <fmt/format.h>

#include <cstring>

#include "util/hash.h"

namespace recur::cache {
namespace {

// Field offsets in the header (little-endian, the only byte order recur runs on).
constexpr std::size_t kOffVersion = 8;
constexpr std::size_t kOffHeaderBytes = 12;
constexpr std::size_t kOffModel = 16;
constexpr std::size_t kOffPartition = 24;
constexpr std::size_t kOffSession = 32;
constexpr std::size_t kOffKind = 40;
constexpr std::size_t kOffOrigin = 41;
constexpr std::size_t kOffTruncatable = 42;
constexpr std::size_t kOffNTokens = 48;
constexpr std::size_t kOffPayloadBytes = 56;
constexpr std::size_t kOffTokensHash = 64;
constexpr std::size_t kOffPayloadHash = 72;
constexpr std::size_t kOffCreated = 80;
constexpr std::size_t kOffHeaderHash = kDiskHeaderBytes - 8;

// Seeds keep the hash of one key part from equalling the hash of another with the same bytes.
constexpr std::uint64_t kSeedTenant = 0x74656e616e74;
constexpr std::uint64_t kSeedSession = 0x73657373696f6e;
constexpr std::uint64_t kSeedHeader = 0x686561646572;

template <typename T>
void put(std::array<std::uint8_t, kDiskHeaderBytes>& out, std::size_t off, T v) {
  std::memcpy(out.data() + off, &v, sizeof(T));
}
template <typename T>
T get(std::span<const std::uint8_t> in, std::size_t off) {
  T v;
  std::memcpy(&v, in.data() + off, sizeof(T));
  return v;
}

std::uint64_t hash_field(std::uint64_t acc, std::string_view s) {
  // Length first, so ("ab", "c") and ("a", "bc") differ.
  return hash_combine(hash_combine(acc, s.size()), hash64(s));
}

}  // namespace

std::int64_t DiskHeader::payload_offset() const {
  return static_cast<std::int64_t>(kDiskHeaderBytes) +
         n_tokens * static_cast<std::int64_t>(sizeof(Token));
}

std::int64_t DiskHeader::file_bytes() const { return payload_offset() + payload_bytes; }

std::array<std::uint8_t, kDiskHeaderBytes> encode_disk_header(const DiskHeader& h) {
  std::array<std::uint8_t, kDiskHeaderBytes> out{};
  std::memcpy(out.data(), kDiskMagic.data(), kDiskMagic.size());
  put<std::uint32_t>(out, kOffVersion, kDiskFormatVersion);
  put<std::uint32_t>(out, kOffHeaderBytes, kDiskHeaderBytes);
  put(out, kOffModel, h.model);
  put(out, kOffPartition, h.partition);
  put(out, kOffSession, h.session);
  put(out, kOffKind, static_cast<std::uint8_t>(h.kind));
  put(out, kOffOrigin, static_cast<std::uint8_t>(h.origin));
  put<std::uint8_t>(out, kOffTruncatable, h.truncatable ? 1 : 0);
  put(out, kOffNTokens, h.n_tokens);
  put(out, kOffPayloadBytes, h.payload_bytes);
  put(out, kOffTokensHash, h.tokens_hash);
  put(out, kOffPayloadHash, h.payload_hash);
  put(out, kOffCreated, h.created_unix_ns);
  put(out, kOffHeaderHash, hash64(out.data(), kOffHeaderHash, kSeedHeader));
  return out;
}

Result<DiskHeader> decode_disk_header(std::span<const std::uint8_t> in, std::int64_t file_bytes) {
  if (in.size() < kDiskHeaderBytes) {
    return Error(StatusCode::kDataLoss, "header: {} bytes, a header has {}", in.size(),
                 kDiskHeaderBytes);
  }
  if (std::memcmp(in.data(), kDiskMagic.data(), kDiskMagic.size()) != 0) {
    return Error(StatusCode::kDataLoss, "header: bytes 0-7 are not the magic of a cache entry");
  }
  if (const auto v = get<std::uint32_t>(in, kOffVersion); v != kDiskFormatVersion) {
    return Error(StatusCode::kDataLoss, "header: format version {} at byte {}, expected {}", v,
                 kOffVersion, kDiskFormatVersion);
  }
  if (const auto n = get<std::uint32_t>(in, kOffHeaderBytes); n != kDiskHeaderBytes) {
    return Error(StatusCode::kDataLoss, "header: header size {} at byte {}, expected {}", n,
                 kOffHeaderBytes, kDiskHeaderBytes);
  }
  const auto stored_hash = get<std::uint64_t>(in, kOffHeaderHash);
  if (stored_hash != hash64(in.data(), kOffHeaderHash, kSeedHeader)) {
    return Error(StatusCode::kDataLoss, "header: checksum at byte {} does not match bytes 0-{}",
                 kOffHeaderHash, kOffHeaderHash - 1);
  }
  DiskHeader h;
  h.model = get<std::uint64_t>(in, kOffModel);
  h.partition = get<std::uint64_t>(in, kOffPartition);
  h.session = get<std::uint64_t>(in, kOffSession);
  const auto kind = get<std::uint8_t>(in, kOffKind);
  const auto origin = get<std::uint8_t>(in, kOffOrigin);
  const auto truncatable = get<std::uint8_t>(in, kOffTruncatable);
  if (kind > 1) return Error(StatusCode::kDataLoss, "header: kind {} at byte {}", kind, kOffKind);
  if (origin >= kNumOrigins) {
    return Error(StatusCode::kDataLoss, "header: origin {} at byte {}", origin, kOffOrigin);
  }
  if (truncatable > 1) {
    return Error(StatusCode::kDataLoss, "header: truncatable {} at byte {}", truncatable,
                 kOffTruncatable);
  }
  h.kind = static_cast<DiskKind>(kind);
  h.origin = static_cast<Origin>(origin);
  h.truncatable = truncatable == 1;
  h.n_tokens = get<std::int64_t>(in, kOffNTokens);
  h.payload_bytes = get<std::int64_t>(in, kOffPayloadBytes);
  // Bounds keep file_bytes() from overflowing: 2^40 tokens or bytes is beyond any entry.
  constexpr std::int64_t kMaxField = std::int64_t{1} << 40;
  if (h.n_tokens <= 0 || h.n_tokens > kMaxField) {
    return Error(StatusCode::kDataLoss, "header: n_tokens {} at byte {}", h.n_tokens, kOffNTokens);
  }
  if (h.payload_bytes < 0 || h.payload_bytes > kMaxField) {
    return Error(StatusCode::kDataLoss, "header: payload_bytes {} at byte {}", h.payload_bytes,
                 kOffPayloadBytes);
  }
  h.tokens_hash = get<std::uint64_t>(in, kOffTokensHash);
  h.payload_hash = get<std::uint64_t>(in, kOffPayloadHash);
  h.created_unix_ns = get<std::int64_t>(in, kOffCreated);
  if (h.file_bytes() != file_bytes) {
    return Error(StatusCode::kDataLoss,
                 "the file has {} bytes but its header says {} (header {} + {} tokens + payload "
                 "{}): torn or truncated",
                 file_bytes, h.file_bytes(), kDiskHeaderBytes, h.n_tokens, h.payload_bytes);
  }
  return h;
}

std::uint64_t partition_hash(const PartitionKey& key) {
  std::uint64_t h = kSeedTenant;
  h = hash_field(h, key.tenant.api_key_identity);
  h = hash_field(h, key.tenant.cache_salt);
  h = hash_field(h, key.bucket.model_id);
  h = hash_field(h, key.bucket.adapter_id);
  h = hash_combine(h, key.bucket.template_signature);
  return hash_combine(h, key.bucket.multimodal_digest);
}

std::uint64_t session_hash(const SessionKey& key) {
  return hash_field(hash_combine(kSeedSession, static_cast<std::uint64_t>(key.kind)), key.id);
}

std::uint64_t tokens_hash(TokenSpan tokens) { return hash64(tokens); }

std::string disk_model_dir(std::uint64_t model) { return fmt::format("v1-{:016x}", model); }

std::string disk_session_dir(std::uint64_t partition, std::uint64_t session) {
  return fmt::format("{:016x}/{:016x}", partition, session);
}

std::string disk_entry_path(const DiskHeader& h) {
  return fmt::format("{}/{}{}-{}-{:016x}{}", disk_session_dir(h.partition, h.session),
                     h.kind == DiskKind::kPrefix ? 'p' : 's', static_cast<int>(h.origin),
                     h.n_tokens, h.tokens_hash, kDiskEntrySuffix);
}

}  // namespace recur::cache
