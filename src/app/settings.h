// Each subcommand's settings as typed structs, read from its parsed options here and nowhere else:
// the commands use the fields, never an option name, so a misspelt name or one outside a command's
// scope fails tests/app/settings_test.cc instead of aborting a production run. Not for checks
// beyond the option table's ranges and choices: what needs the model (`auto` cache budgets) or
// the command's context (a missing --model) is decided by the command.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cache/budgets.h"
#include "config/options.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "kernels/isa.h"
#include "modelgen/generator.h"
#include "server/http_server.h"
#include "server/service.h"
#include "util/log.h"

namespace recur::app {

// Every command (main.cc sets it before running one).
struct LogSettings {
  log::Level level = log::Level::kInfo;  // --log-level
};
LogSettings read_log_settings(const config::Options& opts);

// The compute pool and the model the engine runs (serve, run, bench).
struct RuntimeSettings {
  std::string model_dir;                   // --model (a directory or ORG/NAME); empty: not given
  std::string revision = "main";           // --revision of a Hub model
  kernels::Isa isa = kernels::Isa::kAuto;  // --isa
  int n_threads = 0;                       // --threads; 0: one per available core
  std::chrono::microseconds thread_spin{1000};  // --thread-spin
  int quantize_bits = 0;                        // --quantize: 4, 8; 0: as stored
  int quantize_group_size = 64;                 // --quantize-group-size
  bool keep_freed_memory = true;                // --keep-freed-memory
  int threads_or_cores() const;                 // n_threads, or the available cores
};
RuntimeSettings read_runtime_settings(const config::Options& opts);

// The prompt cache's settings (nullopt budgets where the option is `auto`) and, for the startup
// log, each option's value and where it came from (config::Options::describe).
struct PromptCacheSettings {
  cache::CacheSettings cache;
  struct Described {
    std::string enabled;
    std::string capacity_bytes;
    std::string max_entries;
    std::string ttl;
    std::string snapshot_capacity_bytes;
    std::string snapshot_max_entries;
    std::string snapshot_ttl;
    std::string disk_capacity_bytes;
  };
  Described described;
  std::string disk_dir;                             // --prompt-cache-dir; empty: RAM only
  std::optional<std::int64_t> disk_capacity_bytes;  // --prompt-cache-disk-capacity-bytes
};
PromptCacheSettings read_prompt_cache_settings(const config::Options& opts);

struct ServeSettings {
  RuntimeSettings runtime;
  server::HttpOptions http;
  server::ServiceOptions service;
  engine::EngineOptions engine;
  PromptCacheSettings prompt_cache;
  std::chrono::milliseconds shutdown_grace{10000};  // --shutdown-grace
  bool webui = true;                                // --webui: the chat page at /
};
ServeSettings read_serve_settings(const config::Options& opts);

struct RunSettings {
  RuntimeSettings runtime;
  engine::EngineOptions engine;     // one sequence; --ctx-size
  std::string prompt;               // --prompt; empty: not given
  bool chat = false;                // --chat
  std::int64_t max_tokens = 128;    // --max-tokens
  engine::SamplingParams sampling;  // --temperature, --top-k, --top-p, --seed
};
RunSettings read_run_settings(const config::Options& opts);

struct BenchSettings {
  RuntimeSettings runtime;
  double probe_seconds = 1;  // --bench-seconds
  // Comma-separated counts as given; the command parses them (only when it measures a model) and
  // names the flag in its error.
  std::string prompt_lengths;        // --bench-prompts
  std::string prefix_lengths;        // --bench-prefix
  std::string sequence_counts;       // --bench-sequences
  std::string quantizations;         // --bench-quantize
  std::string decode_orders;         // --bench-decode-orders
  std::int64_t context_tokens = 64;  // --bench-context
  bool stages = false;               // --bench-stages
};
BenchSettings read_bench_settings(const config::Options& opts);

struct MakeModelSettings {
  std::string out_dir;  // --out; empty: not given
  // --family (by default the family a real-geometry --preset names), --preset, --dtype, --seed,
  // --shards, --layers, --hidden-size, --vocab-size, --bits, --group-size.
  modelgen::GenSpec spec;
};
MakeModelSettings read_make_model_settings(const config::Options& opts);

struct QuantizeSettings {
  std::string model_dir;  // --model (a directory or ORG/NAME); empty: not given
  std::string revision;   // --revision
  std::string out_dir;    // --out; empty: not given
  int bits = 0;           // --bits; 0: not given
  int group_size = 64;    // --group-size
};
QuantizeSettings read_quantize_settings(const config::Options& opts);

struct TokenizeSettings {
  std::string model_dir;  // --model (a directory or ORG/NAME); empty: not given
  std::string revision;   // --revision
  bool decode = false;    // --decode
};
TokenizeSettings read_tokenize_settings(const config::Options& opts);

struct TemplateSettings {
  std::string model_dir;          // --model (a directory or ORG/NAME); empty: not given
  std::string revision;           // --revision
  std::string messages_path;      // --messages; empty: not given
  bool generation_prompt = true;  // --generation-prompt
  std::string kwargs_json;        // --kwargs; empty: none
};
TemplateSettings read_template_settings(const config::Options& opts);

struct PullSettings {
  std::string repo_id;            // the argument, or --model
  std::string revision = "main";  // --revision
};
PullSettings read_pull_settings(const config::Options& opts);

}  // namespace recur::app
