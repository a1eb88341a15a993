// What serve, run and bench share at startup: ISA selection, the compute pool, the model and the
// tokenizer, loaded from the runtime settings with one clear error when anything is wrong.
#pragma once

#include <memory>
#include <vector>

#include "app/settings.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace recur::app {

struct Runtime {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::vector<engine::TokenId> stop_token_ids;  // eos ids of the config and the chat end token
  int n_threads = 1;
};

// max_batch_tokens: the largest number of token rows one forward carries (prefill chunk budget).
// --keep-freed-memory (util/malloc_policy.h): first thing in a command, before any thread starts,
// so that every thread allocates from the one arena.
void apply_memory_policy(const RuntimeSettings& settings);

Result<Runtime> load_runtime(const RuntimeSettings& settings, std::int64_t max_batch_tokens,
                             std::int64_t max_logit_rows);

// Tokens per sequence: --ctx-size when given (not 0), else the context the model was trained for
// (config.json), else kFallbackContext for a config that states none. Sequence states grow with
// their tokens, so a long context reserves nothing up front.
inline constexpr std::int64_t kFallbackContext = 131072;
inline constexpr std::int64_t kMaxContext = std::int64_t{1} << 20;
std::int64_t resolve_context(std::int64_t requested, const model::Model& model);

}  // namespace recur::app
