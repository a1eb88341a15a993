#include "app/serve_cache.h"

#include "util/log.h"

namespace recur::app {

namespace {

std::optional<std::int64_t> explicit_value(const config::Options& opts, const char* name) {
  if (opts.is_auto(name)) return std::nullopt;
  return opts.get_int(name);
}

}  // namespace

std::unique_ptr<cache::PromptCache> make_prompt_cache(const config::Options& opts,
                                                      const model::Model& model,
                                                      const Clock& clock) {
  if (!opts.get_bool("prompt-cache")) {
    log::info("prompt cache: off ({})", opts.describe("prompt-cache"));
    return nullptr;
  }
  constexpr Nanos kNanosPerMs = 1'000'000;
  cache::CacheSettings s;
  s.enabled = true;
  s.capacity_bytes = explicit_value(opts, "prompt-cache-capacity-bytes");
  s.max_entries = explicit_value(opts, "prompt-cache-max-entries");
  s.ttl_ns = opts.get_duration_ms("prompt-cache-ttl") * kNanosPerMs;
  s.min_prefix_tokens = opts.get_int("prompt-cache-min-prefix");
  s.snapshot_capacity_bytes = explicit_value(opts, "prompt-cache-snapshot-capacity-bytes");
  s.snapshot_max_entries = explicit_value(opts, "prompt-cache-snapshot-max-entries");
  s.snapshot_ttl_ns = opts.get_duration_ms("prompt-cache-snapshot-ttl") * kNanosPerMs;
  s.boundary = opts.get_bool("prompt-cache-boundary");
  s.warmup = opts.get_bool("prompt-cache-warmup");
  // The radix tree makes lookups cost the prompt length whatever the granularity, so dense KV is
  // reused to the exact token: the next turn then computes only its new tokens.
  s.block_tokens = 1;

  const model::StateLayout& layout = model.state_layout();
  cache::ModelFootprint fp{
      .snapshot_bytes_at = [&layout](std::int64_t n) { return layout.snapshot_bytes(n); },
      .truncatable = layout.truncatable(),
      .context_tokens = opts.get_int("ctx-size")};
  auto mem = cache::read_mem_available();
  cache::CacheBudgets b = cache::choose_budgets(fp, s, mem.is_ok() ? *mem : -1);
  for (const auto& w : b.warnings) log::warn("prompt cache: {}", w);
  auto line = [&](const char* store, const cache::StorePolicy& p, const char* cap_flag,
                  const char* entries_flag, const char* ttl_flag) {
    log::info(
        "prompt cache {}: enabled={} capacity={} ({}) max_entries={} ({}) ttl={}ms ({}) "
        "min_prefix={}",
        store, p.enabled, cache::format_bytes(p.capacity_bytes), opts.describe(cap_flag),
        p.max_entries, opts.describe(entries_flag), p.ttl_ns / kNanosPerMs, opts.describe(ttl_flag),
        p.min_prefix_tokens);
  };
  line("prefix store", b.prefix, "prompt-cache-capacity-bytes", "prompt-cache-max-entries",
       "prompt-cache-ttl");
  line("snapshot store", b.snapshot, "prompt-cache-snapshot-capacity-bytes",
       "prompt-cache-snapshot-max-entries", "prompt-cache-snapshot-ttl");
  log::info("prompt cache: model state {} per sequence + {} per token; {} store serves this model",
            cache::format_bytes(layout.fixed_bytes()),
            cache::format_bytes(layout.kv_bytes_per_token()),
            layout.truncatable() ? "prefix" : "snapshot");
  return std::make_unique<cache::PromptCache>(b, clock);
}

}  // namespace recur::app
