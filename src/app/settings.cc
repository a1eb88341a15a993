// The one place in app/ that reads options by name (see settings.h).
#include "app/settings.h"

#include <filesystem>
#include <optional>
#include <string_view>

#include "util/check.h"
#include "util/thread_pool.h"

namespace recur::app {

namespace {

constexpr Nanos kNanosPerMs = 1'000'000;

int as_int(std::int64_t v) { return static_cast<int>(v); }  // the table's bounds fit an int

std::optional<std::int64_t> unless_auto(const config::Options& opts, std::string_view name) {
  if (opts.is_auto(name)) return std::nullopt;
  return opts.get_int(name);
}

// The model's name when --served-model-name gives none: the checkpoint directory's name.
std::string model_folder_name(const config::Options& opts) {
  std::filesystem::path p(opts.get_string("model"));
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  return name.empty() ? "recur" : name;
}

server::HttpOptions read_http_options(const config::Options& opts) {
  int http_threads = as_int(opts.get_int("http-threads"));
  if (http_threads == 0) {
    http_threads = as_int(opts.get_int("parallel") + opts.get_int("max-queue") + 128);
  }
  return {.host = opts.get_string("host"),
          .port = as_int(opts.get_int("port")),
          .api_key = opts.get_string("api-key"),
          .body_limit_bytes = static_cast<std::size_t>(opts.get_size_bytes("body-limit-bytes")),
          .worker_threads = http_threads,
          .keep_alive_ms = opts.get_duration_ms("keep-alive-timeout"),
          .read_timeout_ms = opts.get_duration_ms("read-timeout"),
          .write_timeout_ms = opts.get_duration_ms("write-timeout"),
          .cors_origins = opts.get_string("cors-origins")};
}

}  // namespace

LogSettings read_log_settings(const config::Options& opts) {
  std::optional<log::Level> level = log::parse_level(opts.get_string("log-level"));
  RECUR_CHECK_MSG(level.has_value(), "a --log-level choice that log::parse_level does not know");
  return {.level = *level};
}

int RuntimeSettings::threads_or_cores() const {
  return n_threads > 0 ? n_threads : available_cores();
}

int quantize_bits(const std::string& choice) { return choice == "q4" ? 4 : choice == "q8" ? 8 : 0; }

RuntimeSettings read_runtime_settings(const config::Options& opts) {
  Result<kernels::Isa> isa = kernels::parse_isa(opts.get_string("isa"));
  RECUR_CHECK_MSG(isa.is_ok(), "an --isa choice that kernels::parse_isa does not know");
  return {.model_dir = opts.get_string("model"),
          .revision = opts.get_string("revision"),
          .isa = *isa,
          .n_threads = as_int(opts.get_int("threads")),
          .thread_spin = std::chrono::microseconds(opts.get_int("thread-spin")),
          .quantize_bits = quantize_bits(opts.get_string("quantize")),
          .quantize_group_size = std::stoi(opts.get_string("quantize-group-size")),
          .keep_freed_memory = opts.get_bool("keep-freed-memory")};
}

PromptCacheSettings read_prompt_cache_settings(const config::Options& opts) {
  PromptCacheSettings s;
  cache::CacheSettings& c = s.cache;
  c.enabled = opts.get_bool("prompt-cache");
  c.capacity_bytes = unless_auto(opts, "prompt-cache-capacity-bytes");
  c.max_entries = unless_auto(opts, "prompt-cache-max-entries");
  c.ttl_ns = opts.get_duration_ms("prompt-cache-ttl") * kNanosPerMs;
  c.min_prefix_tokens = opts.get_int("prompt-cache-min-prefix");
  c.snapshot_capacity_bytes = unless_auto(opts, "prompt-cache-snapshot-capacity-bytes");
  c.snapshot_max_entries = unless_auto(opts, "prompt-cache-snapshot-max-entries");
  c.snapshot_ttl_ns = opts.get_duration_ms("prompt-cache-snapshot-ttl") * kNanosPerMs;
  c.boundary = opts.get_bool("prompt-cache-boundary");
  c.shared = opts.get_bool("prompt-cache-shared");
  c.warmup = opts.get_bool("prompt-cache-warmup");
  // The radix tree makes lookups cost the prompt length whatever the granularity, so dense KV is
  // reused to the exact token: the next turn then computes only its new tokens.
  c.block_tokens = 1;
  s.described = {.enabled = opts.describe("prompt-cache"),
                 .capacity_bytes = opts.describe("prompt-cache-capacity-bytes"),
                 .max_entries = opts.describe("prompt-cache-max-entries"),
                 .ttl = opts.describe("prompt-cache-ttl"),
                 .snapshot_capacity_bytes = opts.describe("prompt-cache-snapshot-capacity-bytes"),
                 .snapshot_max_entries = opts.describe("prompt-cache-snapshot-max-entries"),
                 .snapshot_ttl = opts.describe("prompt-cache-snapshot-ttl"),
                 .disk_capacity_bytes = opts.describe("prompt-cache-disk-capacity-bytes")};
  s.disk_dir = opts.get_string("prompt-cache-dir");
  s.disk_capacity_bytes = unless_auto(opts, "prompt-cache-disk-capacity-bytes");
  return s;
}

ServeSettings read_serve_settings(const config::Options& opts) {
  const std::int64_t ctx = opts.get_int("ctx-size");
  return {.runtime = read_runtime_settings(opts),
          .http = read_http_options(opts),
          .service = {.models = server::ModelNames(opts.get_string("served-model-name"),
                                                   model_folder_name(opts)),
                      .limits = {.unsupported_tools = opts.get_bool("reject-unsupported-tools")
                                                          ? server::UnsupportedTools::kReject
                                                          : server::UnsupportedTools::kLeaveOut},
                      .log_prompts = opts.get_bool("log-prompts"),
                      .response_store = {.capacity_bytes = static_cast<std::size_t>(
                                             opts.get_size_bytes("responses-store-bytes")),
                                         .ttl = std::chrono::milliseconds(
                                             opts.get_duration_ms("responses-store-ttl"))},
                      .default_template_kwargs = opts.get_string("chat-template-kwargs")},
          .engine = {.parallel = as_int(opts.get_int("parallel")),
                     .max_queue = as_int(opts.get_int("max-queue")),
                     .prefill_chunk = opts.get_int("prefill-chunk"),
                     .step_tokens = opts.get_int("step-tokens"),
                     .ctx_size = ctx,
                     .release_memory_when_idle = !opts.get_bool("keep-freed-memory")},
          .prompt_cache = read_prompt_cache_settings(opts),
          .shutdown_grace = std::chrono::milliseconds(opts.get_duration_ms("shutdown-grace")),
          .webui = opts.get_bool("webui")};
}

RunSettings read_run_settings(const config::Options& opts) {
  return {.runtime = read_runtime_settings(opts),
          .engine = {.parallel = 1,
                     .max_queue = 1,
                     .prefill_chunk = 256,
                     .ctx_size = opts.get_int("ctx-size")},
          .prompt = opts.get_string("prompt"),
          .chat = opts.get_bool("chat"),
          .max_tokens = opts.get_int("max-tokens"),
          .sampling = {.temperature = static_cast<float>(opts.get_float("temperature")),
                       .top_k = as_int(opts.get_int("top-k")),
                       .top_p = static_cast<float>(opts.get_float("top-p")),
                       .seed = static_cast<std::uint64_t>(opts.get_int("seed"))}};
}

BenchSettings read_bench_settings(const config::Options& opts) {
  return {.runtime = read_runtime_settings(opts),
          .probe_seconds = opts.get_float("bench-seconds"),
          .prompt_lengths = opts.get_string("bench-prompts"),
          .prefix_lengths = opts.get_string("bench-prefix"),
          .sequence_counts = opts.get_string("bench-sequences"),
          .quantizations = opts.get_string("bench-quantize"),
          .decode_orders = opts.get_string("bench-decode-orders"),
          .context_tokens = opts.get_int("bench-context"),
          .stages = opts.get_bool("bench-stages")};
}

MakeModelSettings read_make_model_settings(const config::Options& opts) {
  MakeModelSettings s{.out_dir = opts.get_string("out")};
  modelgen::GenSpec& spec = s.spec;
  spec.preset = opts.get_string("preset");
  // A preset of one family names it, so `--preset qwen3-0.6b` alone picks qwen3.
  std::optional<modelgen::Family> parsed_family = modelgen::parse_family(opts.get_string("family"));
  if (opts.source("family") == config::Source::kDefault) {
    if (auto f = modelgen::family_of_preset(spec.preset)) parsed_family = f;
  }
  std::optional<modelgen::DType> dtype = modelgen::parse_dtype(opts.get_string("dtype"));
  RECUR_CHECK_MSG(parsed_family && dtype, "a --family or --dtype choice modelgen does not know");
  spec.family = *parsed_family;
  spec.dtype = *dtype;
  spec.seed = static_cast<std::uint64_t>(opts.get_int("seed"));
  spec.shards = as_int(opts.get_int("shards"));
  spec.layers = as_int(opts.get_int("layers"));
  spec.hidden_size = as_int(opts.get_int("hidden-size"));
  spec.vocab_size = as_int(opts.get_int("vocab-size"));
  spec.bits = std::stoi(opts.get_string("bits"));
  spec.group_size = std::stoi(opts.get_string("group-size"));
  spec.eos_bias = opts.get_float("eos-bias");
  return s;
}

QuantizeSettings read_quantize_settings(const config::Options& opts) {
  return {.model_dir = opts.get_string("model"),
          .revision = opts.get_string("revision"),
          .out_dir = opts.get_string("out"),
          .bits = std::stoi(opts.get_string("bits")),
          .group_size = std::stoi(opts.get_string("group-size"))};
}

TokenizeSettings read_tokenize_settings(const config::Options& opts) {
  return {.model_dir = opts.get_string("model"),
          .revision = opts.get_string("revision"),
          .decode = opts.get_bool("decode")};
}

TemplateSettings read_template_settings(const config::Options& opts) {
  return {.model_dir = opts.get_string("model"),
          .revision = opts.get_string("revision"),
          .messages_path = opts.get_string("messages"),
          .generation_prompt = opts.get_bool("generation-prompt"),
          .kwargs_json = opts.get_string("kwargs")};
}

PullSettings read_pull_settings(const config::Options& opts) {
  return {.repo_id = opts.positional().empty() ? opts.get_string("model") : opts.positional()[0],
          .revision = opts.get_string("revision")};
}

}  // namespace recur::app
