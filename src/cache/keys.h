// Who may reuse what: the tenant, bucket and session keys of a cache entry, and its origin.
// Entries of different tenants or buckets never meet; the snapshot store also requires the same
// session. These are plain values: the server resolves them from a request, the cache compares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace recur::cache {

using Token = std::int32_t;
using TokenSpan = std::span<const Token>;

// Both fields isolate: two requests share a tenant only when both are equal.
struct TenantKey {
  std::string api_key_identity;  // an identity derived from the API key (never the key itself)
  std::string cache_salt;        // the request's `cache_salt`, empty when absent
  bool operator==(const TenantKey&) const = default;
};

// What makes two states of the same tokens interchangeable.
struct BucketKey {
  std::string model_id;
  std::string adapter_id;                // empty: no adapter
  std::uint64_t template_signature = 0;  // template text + kwargs + tools (chat/)
  std::uint64_t multimodal_digest = 0;   // 0: text only
  bool operator==(const BucketKey&) const = default;
};

enum class SessionKind : std::uint8_t { kAnonymous, kPromptCacheKey, kUser, kShared };

// prompt_cache_key, else user, else the one anonymous session. The kind is part of the identity,
// so a prompt_cache_key "x" and a user "x" are different sessions. The shared session holds the
// snapshots of prefixes that a tenant's conversations share (origin kShared): every session of the
// tenant and bucket may resume from them.
struct SessionKey {
  SessionKind kind = SessionKind::kAnonymous;
  std::string id;
  bool operator==(const SessionKey&) const = default;

  static SessionKey anonymous() { return {}; }
  static SessionKey shared() { return {SessionKind::kShared, ""}; }
  static SessionKey from_request(std::string_view prompt_cache_key, std::string_view user);
};

struct CacheKey {
  TenantKey tenant;
  BucketKey bucket;
  SessionKey session;
};

// Why a snapshot was taken. Supersede is scoped per origin, so a turn's completion snapshot never
// removes the boundary snapshot the next turn needs. kShared: the end of a conversation's leading
// system messages (and tools), stored in the shared session for the tenant's new conversations.
enum class Origin : std::uint8_t { kCompletion, kBoundary, kWarmup, kShared };
inline constexpr int kNumOrigins = 4;
const char* origin_name(Origin origin);

// Tenant + bucket: one radix tree each.
struct PartitionKey {
  TenantKey tenant;
  BucketKey bucket;
  bool operator==(const PartitionKey&) const = default;
};

struct PartitionKeyHash {
  std::size_t operator()(const PartitionKey& key) const;
};
struct SessionKeyHash {
  std::size_t operator()(const SessionKey& key) const;
};

}  // namespace recur::cache
