// recur serve's prompt-cache setup: model-aware budgets from the cache settings, and one startup
// log line per store saying each value and where it came from.
#pragma once

#include <cstdint>
#include <memory>

#include "app/settings.h"
#include "cache/prompt_cache.h"
#include "model/model.h"

namespace recur::app {

// Null when --no-prompt-cache. ctx_size: the engine's tokens per sequence (--ctx-size).
std::unique_ptr<cache::PromptCache> make_prompt_cache(const PromptCacheSettings& settings,
                                                      std::int64_t ctx_size,
                                                      const model::Model& model,
                                                      const Clock& clock);

}  // namespace recur::app
