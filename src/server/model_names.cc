#include "server/model_names.h"

#include <fmt/format.h>

#include <algorithm>

namespace recur::server {

namespace {

std::string_view trimmed(std::string_view s) {
  constexpr std::string_view kBlank = " \t";
  const auto first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

}  // namespace

ModelNames::ModelNames(std::string_view spec, std::string fallback) {
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view name = trimmed(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (name == "*") {
      wildcard_ = true;
    } else if (!name.empty() && std::find(names_.begin(), names_.end(), name) == names_.end()) {
      names_.emplace_back(name);
    }
  }
  if (names_.empty()) names_.push_back(std::move(fallback));
}

std::optional<std::string> ModelNames::resolve(std::string_view requested) const {
  if (requested.empty()) return primary();
  if (wildcard_ || std::find(names_.begin(), names_.end(), requested) != names_.end()) {
    return std::string(requested);
  }
  return std::nullopt;
}

std::string ModelNames::describe() const {
  std::string out;
  for (const std::string& n : names_) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", n);
  return out;
}

ApiError unknown_model(std::string_view requested, const ModelNames& names) {
  ApiError e = not_found(fmt::format("model '{}' is not served here; this server serves {} "
                                     "(--served-model-name)",
                                     requested, names.describe()),
                         "model_not_found");
  e.param = "model";
  return e;
}

}  // namespace recur::server
