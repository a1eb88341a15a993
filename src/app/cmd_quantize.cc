// `recur quantize`: writes an MLX affine-quantized copy of a checkpoint (convert/quantize.h) and
// prints a one-line summary.
#include <fmt/format.h>

#include "app/commands.h"
#include "app/model_source.h"
#include "app/settings.h"
#include "convert/quantize.h"
#include "util/format.h"
#include "util/log.h"

namespace recur::app {

int cmd_quantize(const QuantizeSettings& settings) {
  if (settings.model_dir.empty() || settings.out_dir.empty()) {
    log::error(
        "quantize needs a checkpoint and an output directory: -m IN -o OUT (--model, "
        "--out)");
    return kExitUsage;
  }
  if (settings.bits == 0) {
    log::error("quantize needs the bits per weight: --bits 4 or --bits 8 (RECUR_BITS)");
    return kExitUsage;
  }
  auto model_dir = resolve_model_dir(settings.model_dir, settings.revision);
  if (!model_dir.is_ok()) {
    log::error("quantize: {}", model_dir.status().message());
    return kExitFailure;
  }
  convert::QuantizeSummary summary;
  const Status status = convert::quantize_checkpoint(*model_dir, settings.out_dir, settings.bits,
                                                      settings.group_size, &summary);
  if (!status.is_ok()) {
    log::error("quantize: {}", status.to_string());
    return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (!summary.not_divisible.empty()) {
    log::warn("quantize: {} weight(s) kept in floats, their width not a multiple of {}: {}",
              summary.not_divisible.size(), settings.group_size,
              fmt::join(summary.not_divisible, ", "));
  }
  fmt::print(
      "wrote {}: bits={} group_size={} quantized={} kept={} dropped={} in={} out={} "
      "files={} in {:.2f}s\n",
      settings.out_dir, settings.bits, settings.group_size, summary.n_quantized, summary.n_kept,
      summary.n_dropped, format_bytes(summary.in_bytes), format_bytes(summary.out_bytes),
      summary.n_files, summary.seconds);
  return kExitOk;
}

}  // namespace recur::app
