// Default budgets from the model's snapshot size and the machine's memory; /proc/meminfo parsing.
#include "cache/budgets.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "util/check.h"
#include "util/format.h"
#include "util/mmap_file.h"

namespace recur::cache {

namespace {

struct StoreNames {
  const char* what;
  const char* capacity_flag;
  const char* capacity_env;
};
constexpr StoreNames kPrefixNames{"prefix store", "--prompt-cache-capacity-bytes",
                                  "RECUR_PROMPT_CACHE_CAPACITY_BYTES"};
constexpr StoreNames kSnapshotNames{"snapshot store", "--prompt-cache-snapshot-capacity-bytes",
                                    "RECUR_PROMPT_CACHE_SNAPSHOT_CAPACITY_BYTES"};

// The automatic byte budget of the store the model uses: room for kConversationsResident
// conversations of a typical length, within a share of the available memory, never under a floor
// (unless memory is that short).
std::int64_t auto_capacity(const ModelFootprint& model, std::int64_t entries_per_conversation,
                           std::int64_t available_memory_bytes) {
  const std::int64_t typical = std::min(model.context_tokens, kTypicalConversationTokens);
  const std::int64_t entry = std::max<std::int64_t>(1, model.snapshot_bytes_at(typical));
  const std::int64_t want = kConversationsResident * entries_per_conversation * entry;
  const std::int64_t ceiling = available_memory_bytes >= 0
                                   ? available_memory_bytes / kMemoryShareDivisor
                                   : kUnknownMemoryCeilingBytes;
  return std::max(std::min(want, ceiling), std::min(kFloorBytes, ceiling));
}

// No more entries than fit at the smallest storable size, and a bounded token index.
std::int64_t auto_max_entries(const ModelFootprint& model, std::int64_t capacity_bytes,
                              std::int64_t min_prefix_tokens) {
  const std::int64_t smallest = std::max<std::int64_t>(
      1, model.snapshot_bytes_at(std::max<std::int64_t>(1, min_prefix_tokens)));
  return std::clamp(capacity_bytes / smallest, kMinAutoEntries, kMaxAutoEntries);
}

StorePolicy make_policy(const ModelFootprint& model, const CacheSettings& settings, bool used,
                        std::optional<std::int64_t> capacity, std::optional<std::int64_t> entries,
                        std::int64_t auto_bytes) {
  StorePolicy p;
  // A store the model never fills stays off unless it was sized explicitly.
  p.enabled = settings.enabled && (used || capacity.has_value());
  p.capacity_bytes = p.enabled ? capacity.value_or(auto_bytes) : 0;
  p.max_entries =
      p.enabled
          ? entries.value_or(auto_max_entries(model, p.capacity_bytes, settings.min_prefix_tokens))
          : 0;
  p.min_prefix_tokens = settings.min_prefix_tokens;
  p.origin_enabled[static_cast<std::size_t>(Origin::kBoundary)] = settings.boundary;
  p.origin_enabled[static_cast<std::size_t>(Origin::kWarmup)] = settings.warmup;
  p.origin_enabled[static_cast<std::size_t>(Origin::kShared)] = settings.shared;
  return p;
}

}  // namespace

CacheBudgets choose_budgets(const ModelFootprint& model, const CacheSettings& settings,
                            std::int64_t available_memory_bytes) {
  RECUR_CHECK(model.snapshot_bytes_at != nullptr && model.context_tokens > 0);
  CacheBudgets b;
  const std::int64_t per_conversation =
      model.truncatable ? kPrefixEntriesPerConversation : kSnapshotEntriesPerConversation;
  const std::int64_t auto_bytes = auto_capacity(model, per_conversation, available_memory_bytes);
  b.prefix = make_policy(model, settings, model.truncatable, settings.capacity_bytes,
                         settings.max_entries, auto_bytes);
  b.prefix.ttl_ns = settings.ttl_ns;
  b.prefix.block_tokens = std::max<std::int64_t>(1, settings.block_tokens);
  b.snapshot = make_policy(model, settings, !model.truncatable, settings.snapshot_capacity_bytes,
                           settings.snapshot_max_entries, auto_bytes);
  b.snapshot.ttl_ns = settings.snapshot_ttl_ns;
  if (!settings.enabled) return b;

  if (available_memory_bytes < 0) {
    b.warnings.push_back(fmt::format("available memory unknown; automatic budgets capped at {}",
                                     format_bytes(kUnknownMemoryCeilingBytes)));
  }
  const StorePolicy& used = model.truncatable ? b.prefix : b.snapshot;
  const StoreNames& names = model.truncatable ? kPrefixNames : kSnapshotNames;
  const std::int64_t at_context = model.snapshot_bytes_at(model.context_tokens);
  if (at_context > used.capacity_bytes) {
    // The longest entry the budget holds (entry bytes grow with tokens): with a model's whole
    // trained context as the default, that length is what an operator needs to know.
    std::int64_t lo = 0, hi = model.context_tokens;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (model.snapshot_bytes_at(mid) <= used.capacity_bytes) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    b.warnings.push_back(fmt::format(
        "the {} budget of {} holds entries of up to {} tokens: longer conversations will not be "
        "cached (one entry at the configured context of {} tokens takes {}). Raise {} ({}) to at "
        "least {} to cache them",
        names.what, format_bytes(used.capacity_bytes), lo, model.context_tokens,
        format_bytes(at_context), names.capacity_flag, names.capacity_env, at_context));
  }
  return b;
}

namespace {
std::string describe_store(const char* name, const StorePolicy& p) {
  if (!p.enabled) return fmt::format("{} off", name);
  return fmt::format("{} {}, {} entries, ttl {}s, min prefix {} tokens", name,
                     format_bytes(p.capacity_bytes), p.max_entries, p.ttl_ns / kNanosPerSecond,
                     p.min_prefix_tokens);
}
}  // namespace

std::string describe_budgets(const CacheBudgets& budgets) {
  return describe_store("prefix store", budgets.prefix) + "; " +
         describe_store("snapshot store", budgets.snapshot);
}

Result<std::int64_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  std::size_t line_start = 0;
  for (int line_no = 1; line_start < meminfo.size(); ++line_no) {
    std::size_t end = meminfo.find('\n', line_start);
    if (end == std::string_view::npos) end = meminfo.size();
    std::string_view line = meminfo.substr(line_start, end - line_start);
    line_start = end + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    std::int64_t kib = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), kib);
    std::string_view unit(ptr, static_cast<std::size_t>(line.data() + line.size() - ptr));
    if (ec != std::errc() || kib < 0 || unit != " kB") {
      return Error(StatusCode::kDataLoss,
                   "meminfo line {}: expected 'MemAvailable: <n> kB', got 'MemAvailable: {}'",
                   line_no, line);
    }
    return kib * 1024;
  }
  return Error(StatusCode::kNotFound, "meminfo has no MemAvailable line");
}

Result<std::int64_t> read_mem_available(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(std::string text, read_file(path));
  Result<std::int64_t> bytes = parse_mem_available(text);
  if (!bytes.is_ok()) return bytes.status().with_context(path);
  return bytes;
}

}  // namespace recur::cache
