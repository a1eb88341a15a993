// recur serve's prompt-cache setup: the option values as the cache's settings, model-aware
// budgets, and one startup log line per store saying each value and where it came from.
#pragma once

#include <memory>

#include "cache/prompt_cache.h"
#include "config/options.h"
#include "model/model.h"

namespace recur::app {

// Null when --no-prompt-cache.
std::unique_ptr<cache::PromptCache> make_prompt_cache(const config::Options& opts,
                                                      const model::Model& model,
                                                      const Clock& clock);

}  // namespace recur::app
