// Session resolution, origin names and key hashing.
#include "cache/keys.h"

#include "util/hash.h"

namespace recur::cache {

SessionKey SessionKey::from_request(std::string_view prompt_cache_key, std::string_view user) {
  if (!prompt_cache_key.empty())
    return {SessionKind::kPromptCacheKey, std::string(prompt_cache_key)};
  if (!user.empty()) return {SessionKind::kUser, std::string(user)};
  return anonymous();
}

const char* origin_name(Origin origin) {
  switch (origin) {
    case Origin::kCompletion:
      return "completion";
    case Origin::kBoundary:
      return "boundary";
    case Origin::kWarmup:
      return "warmup";
    case Origin::kShared:
      return "shared";
  }
  return "unknown";
}

std::size_t PartitionKeyHash::operator()(const PartitionKey& key) const {
  // Field lengths are mixed in too, so ("ab","c") and ("a","bc") hash apart.
  std::uint64_t h = hash64(key.tenant.api_key_identity);
  h = hash_combine(h, hash64(key.tenant.cache_salt, key.tenant.api_key_identity.size()));
  h = hash_combine(h, hash64(key.bucket.model_id));
  h = hash_combine(h, hash64(key.bucket.adapter_id, key.bucket.model_id.size()));
  h = hash_combine(h, key.bucket.template_signature);
  h = hash_combine(h, key.bucket.multimodal_digest);
  return static_cast<std::size_t>(h);
}

std::size_t SessionKeyHash::operator()(const SessionKey& key) const {
  return static_cast<std::size_t>(hash64(key.id, static_cast<std::uint64_t>(key.kind)));
}

}  // namespace recur::cache
