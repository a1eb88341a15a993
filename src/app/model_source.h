// What --model names: a checkpoint directory, or a Hugging Face Hub repository id (ORG/NAME) that
// is fetched into the Hugging Face cache first (hub/pull.h). A directory of that name wins.
#pragma once

#include <string>

#include "util/status.h"

namespace recur::app {

// The directory to load for --model MODEL (at --revision REVISION when it is a repository id).
// A MODEL that is neither an existing path nor a repository id is returned unchanged, for the
// loader to report.
Result<std::string> resolve_model_dir(const std::string& model, const std::string& revision);

}  // namespace recur::app
