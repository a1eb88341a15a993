// `recur make-model`: writes a generated Hugging Face checkpoint (modelgen/generator.h) and prints
// a one-line summary.
#include <fmt/format.h>

#include <chrono>

#include "app/commands.h"
#include "app/settings.h"
#include "modelgen/generator.h"
#include "util/format.h"
#include "util/log.h"

namespace recur::app {

int cmd_make_model(const MakeModelSettings& settings) {
  const std::string& out = settings.out_dir;
  if (out.empty()) {
    log::error("make-model needs an output directory: --out DIR (or RECUR_OUT)");
    return kExitUsage;
  }
  const modelgen::GenSpec& spec = settings.spec;

  const auto start = std::chrono::steady_clock::now();
  modelgen::GenSummary summary;
  Status status = modelgen::write_checkpoint(spec, out, &summary);
  if (!status.is_ok()) {
    log::error("make-model: {}", status.to_string());
    return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "wrote {}: family={} preset={} dtype={} seed={} params={} bytes={} ({}) files={} in "
      "{:.2f}s\n",
      out, modelgen::family_name(spec.family), spec.preset, modelgen::dtype_name(spec.dtype),
      spec.seed, summary.n_params, summary.n_bytes, format_bytes(summary.n_bytes), summary.n_files,
      seconds);
  return kExitOk;
}

}  // namespace recur::app
