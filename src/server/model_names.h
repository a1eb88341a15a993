// The model names one server answers to (--served-model-name): several names, the first the
// primary, and `*` for any name (agents such as Claude Code name a second, small model for their
// background requests). Decides what a request's `model` resolves to and what /v1/models lists.
// Not a router: every name is the same loaded model. Immutable, so thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace recur::server {

class ModelNames {
 public:
  // `spec`: names separated by commas (blanks around a name ignored, empty names skipped), `*`
  // among them for any name. Without a concrete name `fallback` (the checkpoint folder's name) is
  // the primary.
  ModelNames(std::string_view spec, std::string fallback);
  explicit ModelNames(std::string single) : ModelNames(std::string_view(single), single) {}

  // The name a response reports for a request naming `requested`: the name itself when it is
  // served (a client expects its own name back), the primary for an empty one; nullopt when this
  // server does not serve it.
  std::optional<std::string> resolve(std::string_view requested) const;
  // The first concrete name: the cache's model id and what an empty `model` reports.
  const std::string& primary() const { return names_.front(); }
  // The concrete names, primary first (what /v1/models lists; never `*`).
  const std::vector<std::string>& names() const { return names_; }
  bool wildcard() const { return wildcard_; }
  // "'a', 'b'" (and "or any name") for error messages.
  std::string describe() const;

 private:
  std::vector<std::string> names_;
  bool wildcard_ = false;
};

// The 404 of a model name `names` does not serve (code model_not_found, param model).
ApiError unknown_model(std::string_view requested, const ModelNames& names);

}  // namespace recur::server
