#include "config/options_table.h"

#include <vector>

namespace recur::config {
namespace {

constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024;  // 1 TiB: beyond any machine we target
constexpr double kDay_ms = 24.0 * 3600 * 1000;
constexpr std::uint32_t kModelUsers = kServe | kRun | kBench | kTokenize | kTemplate;
constexpr std::uint32_t kEngineUsers = kServe | kRun | kBench;

std::vector<OptionSpec> build_table() {
  using T = OptionType;
  return {
      // ---- general
      {.name = "log-level", .type = T::kEnum, .default_text = "info",
       .help = "Least severe log level written to stderr.", .group = "general",
       .choices = {"trace", "debug", "info", "warn", "error", "off"}},
      {.name = "log-prompts", .type = T::kBool, .default_text = "false",
       .help = "Allow prompt and completion text in debug logs (off: logs never contain them).",
       .scopes = kServe, .group = "general"},

      // ---- model and engine
      {.name = "model", .type = T::kPath, .default_text = "",
       .help = "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer.json).",
       .scopes = kModelUsers, .group = "model", .short_flag = 'm'},
      {.name = "served-model-name", .type = T::kString, .default_text = "",
       .help = "Model id reported by /v1/models and accepted in requests (default: the "
               "directory name of --model).",
       .scopes = kServe, .group = "model"},
      {.name = "ctx-size", .type = T::kInt, .default_text = "8192",
       .help = "Maximum tokens per sequence (prompt + completion).", .scopes = kEngineUsers,
       .group = "model", .min = 16, .max = 1 << 20, .short_flag = 'c'},
      {.name = "threads", .type = T::kInt, .default_text = "0",
       .help = "Compute threads for the kernels (0: one per available core).",
       .scopes = kEngineUsers, .group = "model", .min = 0, .max = 1024, .short_flag = 't'},
      {.name = "isa", .type = T::kEnum, .default_text = "auto",
       .help = "Kernel instruction set: auto picks the best this CPU has (amx, avx512, avx2, "
               "scalar); forcing one is for testing and valgrind.",
       .scopes = kEngineUsers, .group = "model",
       .choices = {"auto", "amx", "avx512", "avx2", "scalar"}},

      // ---- server
      {.name = "host", .type = T::kString, .default_text = "127.0.0.1",
       .help = "Address to listen on. Use 0.0.0.0 only behind an API key or a trusted network.",
       .scopes = kServe, .group = "server"},
      {.name = "port", .type = T::kInt, .default_text = "8080", .help = "TCP port to listen on.",
       .scopes = kServe, .group = "server", .min = 1, .max = 65535},
      {.name = "api-key", .type = T::kString, .default_text = "",
       .help = "Require 'Authorization: Bearer KEY' on every route but /health.", .scopes = kServe,
       .group = "server", .secret = true},
      {.name = "parallel", .type = T::kInt, .default_text = "4",
       .help = "Sequences the engine steps together (continuous batching).", .scopes = kServe,
       .group = "server", .min = 1, .max = 256},
      {.name = "max-queue", .type = T::kInt, .default_text = "64",
       .help = "Requests waiting for a free sequence slot before new ones get 503.",
       .scopes = kServe, .group = "server", .min = 0, .max = 100000},
      {.name = "prefill-chunk", .type = T::kInt, .default_text = "256",
       .help = "Most prompt tokens one sequence forwards per engine step, so a long prompt "
               "cannot stall other sequences' decoding.",
       .scopes = kServe | kBench, .group = "server", .min = 1, .max = 1 << 16},
      {.name = "http-threads", .type = T::kInt, .default_text = "0",
       .help = "HTTP worker threads (0: parallel + max-queue + 16, so idle keep-alive "
               "connections never block new requests).",
       .scopes = kServe, .group = "server", .min = 0, .max = 4096},
      {.name = "body-limit-bytes", .type = T::kSize, .default_text = "16MiB",
       .help = "Largest request body accepted (413 above it).", .scopes = kServe,
       .group = "server", .min = 1024, .max = 1024.0 * 1024 * 1024},
      {.name = "keep-alive-timeout", .type = T::kDuration, .default_text = "5s",
       .help = "Idle time after which a keep-alive connection is closed.", .scopes = kServe,
       .group = "server", .min = 0, .max = 3600.0 * 1000},
      {.name = "read-timeout", .type = T::kDuration, .default_text = "30s",
       .help = "Longest wait for a client to send its request.", .scopes = kServe,
       .group = "server", .min = 1, .max = 3600.0 * 1000},
      {.name = "write-timeout", .type = T::kDuration, .default_text = "60s",
       .help = "Longest wait for a slow client to accept response bytes.", .scopes = kServe,
       .group = "server", .min = 1, .max = 3600.0 * 1000},

      // ---- prompt cache: prefix store (dense KV, shared across sessions of a tenant)
      {.name = "prompt-cache", .type = T::kBool, .default_text = "true",
       .help = "Reuse computed prompt prefixes across requests (--no-prompt-cache to disable).",
       .scopes = kServe | kBench, .group = "prompt cache"},
      {.name = "prompt-cache-capacity-bytes", .type = T::kSize, .default_text = "auto",
       .help = "Byte budget of the prefix store (truncatable dense KV). auto: sized from the "
               "model and available memory.",
       .scopes = kServe | kBench, .group = "prompt cache", .min = 1, .max = kMaxBytes,
       .allow_auto = true},
      {.name = "prompt-cache-max-entries", .type = T::kInt, .default_text = "auto",
       .help = "Most entries in the prefix store.", .scopes = kServe | kBench,
       .group = "prompt cache", .min = 1, .max = 1e7, .allow_auto = true},
      {.name = "prompt-cache-ttl", .type = T::kDuration, .default_text = "1h",
       .help = "Idle time after which a prefix-store entry expires (0: never).",
       .scopes = kServe | kBench, .group = "prompt cache", .min = 0, .max = 30 * kDay_ms},
      {.name = "prompt-cache-min-prefix", .type = T::kInt, .default_text = "16",
       .help = "Shortest prefix (tokens) worth storing or reusing.", .scopes = kServe | kBench,
       .group = "prompt cache", .min = 1, .max = 1 << 20},
      // ---- prompt cache: snapshot store (recurrent/hybrid states, exact prefixes, per session)
      {.name = "prompt-cache-snapshot-capacity-bytes", .type = T::kSize, .default_text = "auto",
       .help = "Byte budget of the snapshot store (recurrent and hybrid model states). auto: "
               "sized from the model's snapshot size and available memory.",
       .scopes = kServe | kBench, .group = "prompt cache", .min = 1, .max = kMaxBytes,
       .allow_auto = true},
      {.name = "prompt-cache-snapshot-max-entries", .type = T::kInt, .default_text = "auto",
       .help = "Most entries in the snapshot store.", .scopes = kServe | kBench,
       .group = "prompt cache", .min = 1, .max = 1e7, .allow_auto = true},
      {.name = "prompt-cache-snapshot-ttl", .type = T::kDuration, .default_text = "1h",
       .help = "Idle time after which a snapshot expires (0: never).", .scopes = kServe | kBench,
       .group = "prompt cache", .min = 0, .max = 30 * kDay_ms},
      {.name = "prompt-cache-boundary", .type = T::kBool, .default_text = "true",
       .help = "Store a snapshot at the end of the rendered history during prefill.",
       .scopes = kServe | kBench, .group = "prompt cache"},
      {.name = "prompt-cache-warmup", .type = T::kBool, .default_text = "true",
       .help = "Prefill the anticipated next-turn prefix in spare engine capacity.",
       .scopes = kServe | kBench, .group = "prompt cache"},

      // ---- generation (recur run)
      {.name = "prompt", .type = T::kString, .default_text = "",
       .help = "Prompt text (with --chat: the user message).", .scopes = kRun,
       .group = "generation", .short_flag = 'p'},
      {.name = "chat", .type = T::kBool, .default_text = "false",
       .help = "Render the prompt as one user turn through the model's chat template.",
       .scopes = kRun, .group = "generation"},
      {.name = "max-tokens", .type = T::kInt, .default_text = "128",
       .help = "Most tokens to generate.", .scopes = kRun, .group = "generation", .min = 0,
       .max = 1 << 20, .short_flag = 'n'},
      {.name = "temperature", .type = T::kFloat, .default_text = "0",
       .help = "Sampling temperature (0: greedy).", .scopes = kRun, .group = "generation",
       .min = 0, .max = 100},
      {.name = "top-k", .type = T::kInt, .default_text = "0",
       .help = "Keep only the k most likely tokens (0: all).", .scopes = kRun,
       .group = "generation", .min = 0, .max = 1 << 20},
      {.name = "top-p", .type = T::kFloat, .default_text = "1",
       .help = "Nucleus sampling mass.", .scopes = kRun, .group = "generation", .min = 0,
       .max = 1},
      {.name = "seed", .type = T::kInt, .default_text = "0",
       .help = "Seed of the sampler's generator (make-model: of the weights).",
       .scopes = kRun | kMakeModel, .group = "generation", .min = 0, .max = 9.007199254740991e15,
       .short_flag = 's'},

      // ---- checkpoint generator (recur make-model)
      {.name = "family", .type = T::kEnum, .default_text = "qwen3_5",
       .help = "Model family of the generated checkpoint.", .scopes = kMakeModel,
       .group = "make-model", .choices = {"qwen3", "qwen3_5", "mamba2"}},
      {.name = "preset", .type = T::kEnum, .default_text = "tiny",
       .help = "Geometry: tiny (for tests) or the real shapes of a released model.",
       .scopes = kMakeModel, .group = "make-model",
       .choices = {"tiny", "qwen3-0.6b", "qwen3.5-0.8b", "mamba2-130m"}},
      {.name = "out", .type = T::kPath, .default_text = "",
       .help = "Directory to write the checkpoint into (created if missing).",
       .scopes = kMakeModel, .group = "make-model", .short_flag = 'o'},
      {.name = "dtype", .type = T::kEnum, .default_text = "bf16",
       .help = "Weight dtype in the safetensors files.", .scopes = kMakeModel,
       .group = "make-model", .choices = {"bf16", "f16", "f32"}},
      {.name = "shards", .type = T::kInt, .default_text = "1",
       .help = "Number of safetensors files (more than 1 writes model.safetensors.index.json).",
       .scopes = kMakeModel, .group = "make-model", .min = 1, .max = 64},
      {.name = "layers", .type = T::kInt, .default_text = "0",
       .help = "Override the preset's number of layers (0: keep).", .scopes = kMakeModel,
       .group = "make-model", .min = 0, .max = 256},
      {.name = "hidden-size", .type = T::kInt, .default_text = "0",
       .help = "Override the preset's hidden size (0: keep).", .scopes = kMakeModel,
       .group = "make-model", .min = 0, .max = 65536},
      {.name = "vocab-size", .type = T::kInt, .default_text = "0",
       .help = "Override the preset's vocabulary (embedding rows; 0: keep).",
       .scopes = kMakeModel, .group = "make-model", .min = 0, .max = 1 << 20},
  };
}

}  // namespace

std::span<const OptionSpec> all_options() {
  static const std::vector<OptionSpec> table = build_table();
  return table;
}

const OptionSpec* find_option(std::string_view name) {
  for (const auto& spec : all_options()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace recur::config
