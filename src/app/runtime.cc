#include "app/runtime.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "app/model_source.h"
#include "kernels/isa.h"
#include "util/format.h"
#include "util/log.h"
#include "util/malloc_policy.h"
#include "util/progress.h"

namespace recur::app {

namespace {

// The process's resident set from /proc/self/status: anonymous pages (the quantized store, f32
// copies of small tensors, scratch) and file-backed ones (the checkpoint's mapped pages the load
// touched). Zeros where the file is unavailable.
struct ResidentBytes {
  std::int64_t anon = 0, file = 0;
};
ResidentBytes resident_bytes() {
  ResidentBytes r;
  std::ifstream in("/proc/self/status");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key) {
    if (key == "RssAnon:" && in >> kib >> unit) r.anon = kib * 1024;
    if (key == "RssFile:" && in >> kib >> unit) r.file = kib * 1024;
  }
  return r;
}

std::vector<engine::TokenId> collect_stop_ids(const model::Model& model,
                                              const tokenizer::Tokenizer& tok) {
  std::vector<engine::TokenId> ids;
  auto add = [&](std::int64_t id) {
    if (id >= 0 && id < model.vocab_size() &&
        std::find(ids.begin(), ids.end(), static_cast<engine::TokenId>(id)) == ids.end()) {
      ids.push_back(static_cast<engine::TokenId>(id));
    }
  };
  for (std::int64_t id : model.eos_ids()) add(id);
  if (auto eos = tok.eos_id()) add(*eos);
  // Chat models end a turn with their end-of-turn token even when the config names another eos.
  for (const char* end : {"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>"}) {
    if (auto id = tok.token_id(end)) add(*id);
  }
  return ids;
}

}  // namespace

std::int64_t resolve_context(std::int64_t requested, const model::Model& model) {
  if (requested > 0) return requested;
  const std::int64_t trained = model.trained_context();
  if (trained <= 0) {
    log::info(
        "context: {} tokens per sequence (config.json states no trained context; "
        "--ctx-size sets it)",
        kFallbackContext);
    return kFallbackContext;
  }
  const std::int64_t ctx = std::min(trained, kMaxContext);
  log::info("context: {} tokens per sequence, as the model was trained{} (--ctx-size sets it)", ctx,
            ctx < trained ? fmt::format(" (capped from {})", trained) : "");
  return ctx;
}

void apply_memory_policy(const RuntimeSettings& settings) {
  if (settings.keep_freed_memory && !keep_freed_memory()) {
    log::warn("glibc refused a malloc setting: freed memory goes back to the system as before");
  }
}

Result<Runtime> load_runtime(const RuntimeSettings& settings, std::int64_t max_batch_tokens,
                             std::int64_t max_logit_rows) {
  Runtime rt;
  if (settings.model_dir.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 "no model: pass -m DIR (--model, env RECUR_MODEL), a Hugging Face checkpoint "
                 "directory or a Hub repository id ORG/NAME");
  }
  RECUR_ASSIGN_OR_RETURN(const std::string dir,
                         resolve_model_dir(settings.model_dir, settings.revision));
  RECUR_ASSIGN_OR_RETURN(kernels::Isa isa, kernels::select_isa(settings.isa));
  rt.n_threads = settings.threads_or_cores();
  rt.pool = std::make_unique<ThreadPool>(rt.n_threads, settings.thread_spin);

  // One line or bar for the whole load (tokenizer, mapping, binding the weights): quiet when it
  // takes under a second, as a mapped bf16 checkpoint does; quantizing on load or repacking a
  // quantized checkpoint takes longer.
  Progress progress(settings.quantize_bits != 0 ? fmt::format("loading {} (quantizing to {} bits)",
                                                              dir, settings.quantize_bits)
                                                : fmt::format("loading {}", dir),
                    0, ProgressUnit::kBytes);
  const auto load_start = std::chrono::steady_clock::now();
  auto tok = tokenizer::Tokenizer::load_dir(dir);
  if (!tok.is_ok()) {
    progress.finish("failed");
    return tok.status();
  }
  rt.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
  model::LoadOptions lo{.max_batch_tokens = max_batch_tokens,
                        .max_logit_rows = max_logit_rows,
                        .quantize_bits = settings.quantize_bits,
                        .quantize_group_size = settings.quantize_group_size,
                        .progress = &progress,
                        .pool = rt.pool.get()};
  auto model = model::Model::load(dir, lo);
  progress.finish(model.is_ok() ? "done" : "failed");
  RECUR_RETURN_IF_ERROR(model.status());
  rt.model = std::move(*model);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (settings.quantize_bits != 0) {
    log::info("quantized on load to {} bits in groups of {}: {} held in memory ({:.2f} s)",
              settings.quantize_bits, settings.quantize_group_size,
              format_bytes(static_cast<std::int64_t>(rt.model->quantized_bytes())), load_s);
  } else if (rt.model->quantized_bytes() != 0) {
    log::info("quantized checkpoint repacked for the kernels: {} held in memory ({:.2f} s)",
              format_bytes(static_cast<std::int64_t>(rt.model->quantized_bytes())), load_s);
  }
  rt.stop_token_ids = collect_stop_ids(*rt.model, *rt.tokenizer);
  // Weights are read in place from the mapping (a mixture of experts' unselected experts are
  // never paged in); only quantized ones are copied.
  const ResidentBytes rss = resident_bytes();
  log::info(
      "memory: checkpoint mapped {}, quantized store {}; resident {} anonymous + {} "
      "file-backed",
      format_bytes(static_cast<std::int64_t>(rt.model->weight_bytes())),
      format_bytes(static_cast<std::int64_t>(rt.model->quantized_bytes())), format_bytes(rss.anon),
      format_bytes(rss.file));
  log::info("model dir={} family={} layers={} vocab={} weights={} isa={} threads={}", dir,
            rt.model->family(), rt.model->n_layers(), rt.model->vocab_size(),
            format_bytes(static_cast<std::int64_t>(rt.model->weight_bytes())),
            kernels::isa_name(isa), rt.n_threads);
  return rt;
}

}  // namespace recur::app
