// recur serve's prompt-cache setup: model-aware budgets from the cache settings, the disk tier
// (--prompt-cache-dir), and one startup log line per store saying each value and its source.
#pragma once

#include <cstdint>
#include <memory>

#include "app/settings.h"
#include "cache/prompt_cache.h"
#include "model/model.h"

namespace recur::app {

// Null when --no-prompt-cache. ctx_size: the engine's tokens per sequence (--ctx-size). Errors:
// the disk tier's directory (--prompt-cache-dir) cannot be created, read or written.
Result<std::unique_ptr<cache::PromptCache>> make_prompt_cache(const PromptCacheSettings& settings,
                                                              std::int64_t ctx_size,
                                                              const model::Model& model,
                                                              const Clock& clock);

}  // namespace recur::app
