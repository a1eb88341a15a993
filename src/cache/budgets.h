// Model-aware default budgets for the two stores: a pure function of the model's snapshot size
// formula, the configured context, the machine's available memory and the explicit settings
// (which always win). Formula and reasoning: docs/prompt-cache.md. Option parsing is config/'s
// job; this takes a plain struct.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/store.h"
#include "util/status.h"

namespace recur::cache {

inline constexpr Nanos kNanosPerSecond = 1'000'000'000;

// The prompt-cache options as config/ parsed them; nullopt where the option is `auto`.
struct CacheSettings {
  bool enabled = true;                                  // --prompt-cache
  std::optional<std::int64_t> capacity_bytes;           // --prompt-cache-capacity-bytes
  std::optional<std::int64_t> max_entries;              // --prompt-cache-max-entries
  Nanos ttl_ns = 3600 * kNanosPerSecond;                // --prompt-cache-ttl
  std::int64_t min_prefix_tokens = 16;                  // --prompt-cache-min-prefix
  std::optional<std::int64_t> snapshot_capacity_bytes;  // --prompt-cache-snapshot-capacity-bytes
  std::optional<std::int64_t> snapshot_max_entries;     // --prompt-cache-snapshot-max-entries
  Nanos snapshot_ttl_ns = 3600 * kNanosPerSecond;       // --prompt-cache-snapshot-ttl
  bool boundary = true;                                 // --prompt-cache-boundary
  bool warmup = true;                                   // --prompt-cache-warmup
  bool shared = true;                                   // --prompt-cache-shared
  std::int64_t block_tokens = 16;                       // prefix store granularity (not a flag yet)
};

// What the cache needs to know about the loaded model.
struct ModelFootprint {
  std::function<std::int64_t(std::int64_t n_tokens)> snapshot_bytes_at;  // exact payload bytes
  bool truncatable = false;  // dense KV: the prefix store; otherwise the snapshot store
  std::int64_t context_tokens = 0;
};

struct CacheBudgets {
  StorePolicy prefix;    // MatchMode::kCommonPrefix
  StorePolicy snapshot;  // MatchMode::kExactPrefix
  // For the startup log, one line each (without a "prompt cache:" prefix; the caller adds its
  // own): at most one names the flag to raise.
  std::vector<std::string> warnings;
};

// Constants of the formula (docs/prompt-cache.md explains each).
inline constexpr std::int64_t kTypicalConversationTokens = 8192;
inline constexpr std::int64_t kConversationsResident = 8;
inline constexpr std::int64_t kSnapshotEntriesPerConversation = 3;  // completion, boundary, warmup
inline constexpr std::int64_t kPrefixEntriesPerConversation = 2;    // completion, warmup
inline constexpr std::int64_t kMemoryShareDivisor = 4;              // at most 1/4 of MemAvailable
inline constexpr std::int64_t kFloorBytes = std::int64_t{256} << 20;
inline constexpr std::int64_t kUnknownMemoryCeilingBytes = std::int64_t{2} << 30;
inline constexpr std::int64_t kMinAutoEntries = 16;
inline constexpr std::int64_t kMaxAutoEntries = 4096;

// available_memory_bytes < 0: unknown (a warning says so and a fixed ceiling is used).
CacheBudgets choose_budgets(const ModelFootprint& model, const CacheSettings& settings,
                            std::int64_t available_memory_bytes);

// One line for the startup summary: "prefix store off; snapshot store 2.95 GiB, 63 entries, ...".
std::string describe_budgets(const CacheBudgets& budgets);

// MemAvailable from the text of /proc/meminfo, in bytes.
Result<std::int64_t> parse_mem_available(std::string_view meminfo);
Result<std::int64_t> read_mem_available(const std::string& path = "/proc/meminfo");

}  // namespace recur::cache
