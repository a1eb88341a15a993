#include "app/serve_cache.h"

#include "util/format.h"
#include "util/log.h"

namespace recur::app {

std::unique_ptr<cache::PromptCache> make_prompt_cache(const PromptCacheSettings& settings,
                                                      std::int64_t ctx_size,
                                                      const model::Model& model,
                                                      const Clock& clock) {
  const PromptCacheSettings::Described& described = settings.described;
  if (!settings.cache.enabled) {
    log::info("prompt cache: off ({})", described.enabled);
    return nullptr;
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
  return std::make_unique<cache::PromptCache>(b, clock);
}

}  // namespace recur::app
