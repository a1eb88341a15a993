#include "app/serve_cache.h"

#include <sys/statvfs.h>

#include <algorithm>

#include "engine/cached_state.h"
#include "util/format.h"
#include "util/log.h"

namespace recur::app {
namespace {

constexpr std::int64_t kAutoDiskCeilingBytes = std::int64_t{64} << 30;

// The disk tier, or null without --prompt-cache-dir. auto capacity: half the free space of the
// directory's filesystem now (the rest stays for whatever else lives there), at most 64 GiB.
Result<std::unique_ptr<cache::DiskTier>> make_disk_tier(const PromptCacheSettings& settings,
                                                        const model::Model& model) {
  if (settings.disk_dir.empty()) return std::unique_ptr<cache::DiskTier>();
  cache::DiskPolicy policy{.dir = settings.disk_dir};
  if (settings.disk_capacity_bytes) {
    policy.capacity_bytes = *settings.disk_capacity_bytes;
  } else {
    struct statvfs fs {};
    if (::statvfs(settings.disk_dir.c_str(), &fs) != 0) {
      return Error(StatusCode::kIo,
                   "--prompt-cache-dir {}: cannot read the free space for "
                   "--prompt-cache-disk-capacity-bytes auto (create the directory, or give a size)",
                   settings.disk_dir);
    }
    const auto free_bytes =
        static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
    policy.capacity_bytes =
        std::clamp<std::int64_t>(free_bytes / 2, 1 << 20, kAutoDiskCeilingBytes);
  }
  auto tier = cache::DiskTier::open(policy, std::make_shared<engine::CachedStateCodec>(model));
  if (!tier.is_ok()) {
    return Error(StatusCode::kIo, "--prompt-cache-dir: {}", tier.status().message());
  }
  log::info("prompt cache disk: {} capacity={} ({})", tier.value()->root(),
            format_bytes(policy.capacity_bytes), settings.described.disk_capacity_bytes);
  return std::move(*tier);
}

}  // namespace

Result<std::unique_ptr<cache::PromptCache>> make_prompt_cache(const PromptCacheSettings& settings,
                                                              std::int64_t ctx_size,
                                                              const model::Model& model,
                                                              const Clock& clock) {
  const PromptCacheSettings::Described& described = settings.described;
  if (!settings.cache.enabled) {
    log::info("prompt cache: off ({})", described.enabled);
    if (!settings.disk_dir.empty()) log::warn("prompt cache: off, so --prompt-cache-dir is unused");
    return std::unique_ptr<cache::PromptCache>();
  }
  constexpr Nanos kNanosPerMs = 1'000'000;
  const model::StateLayout& layout = model.state_layout();
  cache::ModelFootprint fp{
      .snapshot_bytes_at = [&layout](std::int64_t n) { return layout.snapshot_bytes(n); },
      .truncatable = layout.truncatable(),
      .context_tokens = ctx_size};
  auto mem = cache::read_mem_available();
  cache::CacheBudgets b = cache::choose_budgets(fp, settings.cache, mem.is_ok() ? *mem : -1);
  for (const auto& w : b.warnings) log::warn("prompt cache: {}", w);
  auto line = [](const char* store, const cache::StorePolicy& p, const std::string& capacity,
                 const std::string& entries, const std::string& ttl) {
    log::info(
        "prompt cache {}: enabled={} capacity={} ({}) max_entries={} ({}) ttl={}ms ({}) "
        "min_prefix={}",
        store, p.enabled, format_bytes(p.capacity_bytes), capacity, p.max_entries, entries,
        p.ttl_ns / kNanosPerMs, ttl, p.min_prefix_tokens);
  };
  line("prefix store", b.prefix, described.capacity_bytes, described.max_entries, described.ttl);
  line("snapshot store", b.snapshot, described.snapshot_capacity_bytes,
       described.snapshot_max_entries, described.snapshot_ttl);
  log::info("prompt cache: model state {} per sequence + {} per token; {} store serves this model",
            format_bytes(layout.fixed_bytes()), format_bytes(layout.kv_bytes_per_token()),
            layout.truncatable() ? "prefix" : "snapshot");
  auto disk = make_disk_tier(settings, model);
  if (!disk.is_ok()) return disk.status();
  return std::make_unique<cache::PromptCache>(b, clock, std::move(*disk));
}

}  // namespace recur::app
