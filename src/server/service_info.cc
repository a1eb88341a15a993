// The informational routes: health, cache stats and reset, Prometheus metrics.
#include <malloc.h>

#include <nlohmann/json.hpp>

#include "server/service.h"

namespace recur::server {

namespace {

using json = nlohmann::ordered_json;

json store_json(const cache::StoreStats& s) {
  json misses = {{"disabled", s.misses_disabled},
                 {"no_candidate", s.misses_no_candidate},
                 {"different_session", s.misses_different_session},
                 {"diverged", s.misses_diverged},
                 {"too_short", s.misses_too_short},
                 {"whole_prompt", s.misses_whole_prompt}};
  json rejections = {{"oversized", s.rejections_oversized},
                     {"too_short", s.rejections_too_short},
                     {"disabled", s.rejections_disabled}};
  json last_miss = {{"reason", cache::miss_reason_name(s.last_miss)}};
  if (s.last_miss == cache::MissReason::kDiverged) {
    last_miss["diverged_at"] = s.last_miss_diverged_at;
    last_miss["entry_tokens"] = s.last_miss_entry_tokens;
  }
  return json{{"enabled", s.enabled},
              {"entries", s.entries},
              {"bytes", s.bytes},
              {"capacity_bytes", s.capacity_bytes},
              {"max_entries", s.max_entries},
              {"bytes_per_entry", s.bytes_per_entry},
              {"lookups", s.lookups},
              {"hits", s.hits},
              {"hits_shared", s.hits_shared},
              {"hit_rate", s.hit_rate},
              {"tokens_reused", s.tokens_reused},
              {"inserts", s.inserts},
              {"replaces", s.replaces},
              {"supersedes", s.supersedes},
              {"evictions", {{"lru", s.evictions_lru}, {"ttl", s.evictions_ttl}}},
              {"self_evictions", s.self_evictions},
              {"rejections", rejections},
              {"misses", misses},
              {"last_miss", last_miss}};
}

json disk_json(const cache::DiskStats& s) {
  const double read_ms_avg = s.hits > 0 ? double(s.read_ns_total) / double(s.hits) / 1e6 : 0;
  return json{
      {"enabled", s.enabled},
      {"dir", s.dir},
      {"entries", s.entries},
      {"bytes", s.bytes},
      {"capacity_bytes", s.capacity_bytes},
      {"indexed_at_start", s.indexed_at_start},
      {"discovered", s.discovered},
      {"lookups", s.lookups},
      {"hits", s.hits},
      {"hits_shared", s.hits_shared},
      {"unwritten_hits", s.unwritten_hits},
      {"tokens_reused", s.tokens_reused},
      {"read_bytes", s.read_bytes},
      {"read_ms_avg", read_ms_avg},
      {"read_ms_max", double(s.read_ns_max) / 1e6},
      {"writes",
       {{"done", s.writes},
        {"bytes", s.write_bytes},
        {"failed", s.write_failures},
        {"dropped", s.writes_dropped},
        {"coalesced", s.writes_coalesced},
        {"cancelled", s.writes_cancelled},
        {"oversized", s.writes_oversized},
        {"pending", s.pending_writes},
        {"pending_bytes", s.pending_write_bytes}}},
      {"dropped_files",
       {{"corrupt", s.corrupt_dropped}, {"temp", s.temps_dropped}, {"vanished", s.vanished}}},
      {"read_failures", s.read_failures},
      {"evictions", s.evictions},
      {"supersedes", s.supersedes},
      {"cleared_entries", s.cleared_entries}};
}

void sync_disk_metrics(ServerMetrics& m, const cache::DiskStats& s) {
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v)); };
  m.set_gauge("recur_cache_entries", "Entries held by the prompt-cache store.", "store=disk",
              double(s.entries));
  m.set_gauge("recur_cache_bytes", "Bytes held by the prompt-cache store.", "store=disk",
              double(s.bytes));
  m.set_gauge("recur_cache_capacity_bytes", "Byte budget of the prompt-cache store.", "store=disk",
              double(s.capacity_bytes));
  m.set_gauge("recur_cache_disk_pending_write_bytes",
              "Snapshot bytes waiting for the disk tier's writer.", "",
              double(s.pending_write_bytes));
  m.sync_counter("recur_cache_disk_lookups_total", "Loads asked of the disk tier.", "",
                 u(s.lookups));
  m.sync_counter("recur_cache_disk_hits_total", "Disk loads that restored a longer prefix.", "",
                 u(s.hits));
  m.sync_counter("recur_cache_disk_shared_hits_total",
                 "Disk hits on a tenant's shared system-prompt entry.", "", u(s.hits_shared));
  m.sync_counter("recur_cache_disk_read_bytes_total", "Bytes read by disk-tier hits.", "",
                 u(s.read_bytes));
  m.sync_counter("recur_cache_disk_read_nanoseconds_total",
                 "Time disk-tier hits spent reading, checking and decoding (divide by hits).", "",
                 u(s.read_ns_total));
  m.sync_counter("recur_cache_disk_writes_total", "Disk-tier writes, by outcome.", "outcome=done",
                 u(s.writes));
  const std::pair<const char*, std::int64_t> writes[] = {{"failed", s.write_failures},
                                                         {"dropped", s.writes_dropped},
                                                         {"oversized", s.writes_oversized}};
  for (auto [outcome, v] : writes) {
    m.sync_counter("recur_cache_disk_writes_total", "", std::string("outcome=") + outcome, u(v));
  }
  m.sync_counter("recur_cache_disk_write_bytes_total", "Bytes written by the disk tier.", "",
                 u(s.write_bytes));
  const std::pair<const char*, std::int64_t> dropped[] = {
      {"corrupt", s.corrupt_dropped}, {"temp", s.temps_dropped}, {"vanished", s.vanished}};
  for (auto [reason, v] : dropped) {
    m.sync_counter("recur_cache_disk_dropped_files_total",
                   "Disk-tier files detected as bad (corrupt), left by dead writers (temp) or "
                   "deleted by another replica (vanished).",
                   std::string("reason=") + reason, u(v));
  }
  m.sync_counter("recur_cache_evictions_total", "Entries evicted, by reason.",
                 "store=disk,reason=lru", u(s.evictions));
}

void sync_store_metrics(ServerMetrics& m, const char* store, const cache::StoreStats& s) {
  const std::string l = std::string("store=") + store;
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v)); };
  m.set_gauge("recur_cache_entries", "Entries held by the prompt-cache store.", l,
              double(s.entries));
  m.set_gauge("recur_cache_bytes", "Bytes held by the prompt-cache store.", l, double(s.bytes));
  m.set_gauge("recur_cache_capacity_bytes", "Byte budget of the prompt-cache store.", l,
              double(s.capacity_bytes));
  m.sync_counter("recur_cache_lookups_total", "Prompt-cache lookups.", l, u(s.lookups));
  m.sync_counter("recur_cache_hits_total", "Prompt-cache lookups that found a reusable prefix.", l,
                 u(s.hits));
  m.sync_counter("recur_cache_shared_hits_total",
                 "Hits on a prefix shared by the tenant's conversations (a system prompt).", l,
                 u(s.hits_shared));
  m.sync_counter("recur_cache_tokens_reused_total", "Prompt tokens restored instead of computed.",
                 l, u(s.tokens_reused));
  m.sync_counter("recur_cache_inserts_total", "Snapshots admitted.", l, u(s.inserts));
  m.sync_counter("recur_cache_supersedes_total",
                 "Entries removed because a longer snapshot of the same conversation arrived.", l,
                 u(s.supersedes));
  m.sync_counter("recur_cache_evictions_total", "Entries evicted, by reason.", l + ",reason=lru",
                 u(s.evictions_lru));
  m.sync_counter("recur_cache_evictions_total", "Entries evicted, by reason.", l + ",reason=ttl",
                 u(s.evictions_ttl));
  m.sync_counter("recur_cache_self_evictions_total",
                 "Entries of the conversation being admitted evicted to make room.", l,
                 u(s.self_evictions));
  const std::pair<const char*, std::int64_t> rejects[] = {{"oversized", s.rejections_oversized},
                                                          {"too_short", s.rejections_too_short},
                                                          {"disabled", s.rejections_disabled}};
  for (auto [reason, v] : rejects) {
    m.sync_counter("recur_cache_rejections_total", "Snapshots refused, by reason.",
                   l + ",reason=" + reason, u(v));
  }
  const std::pair<const char*, std::int64_t> misses[] = {
      {"disabled", s.misses_disabled},
      {"no_candidate", s.misses_no_candidate},
      {"different_session", s.misses_different_session},
      {"diverged", s.misses_diverged},
      {"too_short", s.misses_too_short},
      {"whole_prompt", s.misses_whole_prompt}};
  for (auto [reason, v] : misses) {
    m.sync_counter("recur_cache_misses_total",
                   "Prompt-cache lookups that found nothing, by reason.", l + ",reason=" + reason,
                   u(v));
  }
}

}  // namespace

HttpResponse Service::health(const HttpRequest&) const {
  if (ready_backend() == nullptr) return HttpResponse::json(503, R"({"status":"loading"})");
  if (draining_.load()) return HttpResponse::json(503, R"({"status":"draining"})");
  return HttpResponse::json(200, R"({"status":"ok"})");
}

HttpResponse Service::cache_stats(const HttpRequest&) const {
  const Backend* be = ready_backend();
  json out = {{"enabled", be != nullptr && be->cache != nullptr}};
  if (be != nullptr && be->cache != nullptr) {
    cache::PromptCacheStats s = be->cache->stats();
    out["prefix"] = store_json(s.prefix);
    out["snapshot"] = store_json(s.snapshot);
    if (s.disk) out["disk"] = disk_json(*s.disk);
  }
  if (be != nullptr) {
    engine::EngineStats e = be->engine->stats();
    out["warmup"] = {{"pending", e.warmups_pending}, {"done", e.warmups_done}};
    out["restores"] = {{"in_place", e.restores_in_place},
                       {"copied", e.restores_copied},
                       {"peer", e.restores_peer}};
    out["shared_waits"] = e.shared_waits;
  }
  return HttpResponse::json(200, out.dump());
}

HttpResponse Service::cache_reset(const HttpRequest&) {
  const Backend* be = ready_backend();
  cache::ClearResult r;
  if (be != nullptr && be->cache != nullptr) r = be->cache->clear();
  // What the entries held goes back to the system now, not at the allocator's leisure.
  malloc_trim(0);
  json out{{"freed_entries", r.freed_entries}, {"freed_bytes", r.freed_bytes}};
  if (be != nullptr && be->cache != nullptr && be->cache->disk() != nullptr) {
    out["freed_disk_entries"] = r.freed_disk_entries;
    out["freed_disk_bytes"] = r.freed_disk_bytes;
  }
  return HttpResponse::json(200, out.dump());
}

HttpResponse Service::metrics(const HttpRequest&) const {
  if (const Backend* be = ready_backend()) {
    engine::EngineStats e = be->engine->stats();
    metrics_.set_queue_depth(e.queued);
    metrics_.set_active_sequences(e.active);
    metrics_.sync_counter("recur_engine_steps_total", "Batched forward passes the engine ran.", "",
                          static_cast<std::uint64_t>(e.steps));
    metrics_.sync_counter("recur_computed_tokens_total",
                          "Prompt tokens the engine computed rather than restored from the cache.",
                          "kind=prompt", static_cast<std::uint64_t>(e.prefill_tokens));
    metrics_.sync_counter("recur_computed_tokens_total", "", "kind=warmup",
                          static_cast<std::uint64_t>(e.warmup_tokens));
    metrics_.sync_counter("recur_cache_restores_total",
                          "Cache hits restored into a sequence state: in_place when a kept state "
                          "still held the entry (nothing copied), copied otherwise, peer when a "
                          "dense model's shared prefix was copied from the conversation computing "
                          "it.",
                          "kind=in_place", static_cast<std::uint64_t>(e.restores_in_place));
    metrics_.sync_counter("recur_cache_restores_total", "", "kind=copied",
                          static_cast<std::uint64_t>(e.restores_copied));
    metrics_.sync_counter("recur_cache_restores_total", "", "kind=peer",
                          static_cast<std::uint64_t>(e.restores_peer));
    metrics_.sync_counter("recur_shared_prefix_waits_total",
                          "New conversations that waited for another to compute the system prompt "
                          "they share, instead of computing it too.",
                          "", static_cast<std::uint64_t>(e.shared_waits));
    metrics_.sync_counter("recur_dropped_queued_requests_total",
                          "Queued requests dropped because their client disconnected.", "",
                          static_cast<std::uint64_t>(e.dropped_queued));
    if (be->cache != nullptr) {
      cache::PromptCacheStats s = be->cache->stats();
      sync_store_metrics(metrics_, "prefix", s.prefix);
      sync_store_metrics(metrics_, "snapshot", s.snapshot);
      if (s.disk) sync_disk_metrics(metrics_, *s.disk);
    }
  }
  HttpResponse r = HttpResponse::json(200, metrics_.render());
  r.content_type = "text/plain; version=0.0.4";
  return r;
}

}  // namespace recur::server
