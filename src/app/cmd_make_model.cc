// `recur make-model`: writes a generated Hugging Face checkpoint (modelgen/generator.h) and prints
// a one-line summary.
#include <fmt/format.h>

#include <chrono>

#include "app/commands.h"
#include "config/options.h"
#include "modelgen/generator.h"
#include "util/log.h"

namespace recur::app {

namespace {

// A real-geometry preset names its family, so `--preset qwen3-0.6b` alone picks qwen3.
std::string_view family_of_preset(std::string_view preset) {
  if (preset == "qwen3-0.6b") return "qwen3";
  if (preset == "qwen3.5-0.8b") return "qwen3_5";
  if (preset == "mamba2-130m") return "mamba2";
  return {};
}

}  // namespace

int cmd_make_model(const config::Options& opts) {
  const std::string& out = opts.get_string("out");
  if (out.empty()) {
    log::error("make-model needs an output directory: --out DIR (or RECUR_OUT)");
    return kExitUsage;
  }
  modelgen::GenSpec spec;
  spec.preset = opts.get_string("preset");
  std::string family = opts.get_string("family");
  if (opts.source("family") == config::Source::kDefault && !family_of_preset(spec.preset).empty()) {
    family = std::string(family_of_preset(spec.preset));
  }
  // The option table only allows valid words, so these parse.
  spec.family = modelgen::parse_family(family).value_or(modelgen::Family::kQwen3_5);
  spec.dtype = modelgen::parse_dtype(opts.get_string("dtype")).value_or(modelgen::DType::kBF16);
  spec.seed = static_cast<std::uint64_t>(opts.get_int("seed"));
  spec.shards = static_cast<int>(opts.get_int("shards"));
  spec.layers = static_cast<int>(opts.get_int("layers"));
  spec.hidden_size = static_cast<int>(opts.get_int("hidden-size"));
  spec.vocab_size = static_cast<int>(opts.get_int("vocab-size"));

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
      spec.seed, summary.n_params, summary.n_bytes, config::format_bytes(summary.n_bytes),
      summary.n_files, seconds);
  return kExitOk;
}

}  // namespace recur::app
