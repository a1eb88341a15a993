// quantize_checkpoint: checks the input, plans every tensor by the MLX rules (mlx_plan.h),
// streams the weights from the input's mappings through write_mlx_weights, then writes the config
// and copies the other files.
#include "convert/quantize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "convert/mlx_layout.h"
#include "convert/mlx_plan.h"
#include "convert/mlx_writer.h"
#include "convert/output_dir.h"
#include "model/checkpoint.h"
#include "util/mmap_file.h"
#include "util/progress.h"

namespace recur::convert {

namespace {

namespace fs = std::filesystem;

// A model_type of a family the loader reads, less the spellings its conversion rules do not
// describe (MlxConversion::unconverted_types: Gemma 3's vision wrapper, Qwen3.5's text-only ones).
Status check_model_type(const model::Checkpoint& ck) {
  const std::string type = ck.config().model_type();
  const model::FamilyInfo* f = model::family_for_type(type);
  const auto& refused = f != nullptr ? f->mlx.unconverted_types : std::vector<std::string_view>{};
  if (f != nullptr && std::find(refused.begin(), refused.end(), type) == refused.end()) {
    return Status::ok();
  }
  std::vector<std::string_view> types;
  for (const model::FamilyInfo& fam : model::families()) {
    for (std::string_view t : fam.model_types) {
      const auto& no = fam.mlx.unconverted_types;
      if (std::find(no.begin(), no.end(), t) == no.end()) types.push_back(t);
    }
  }
  return Error(StatusCode::kInvalidArgument,
               "{}: model_type '{}' is not one quantize converts ({})", ck.dir(), type,
               fmt::join(types, ", "));
}

// Granite 4.0-H's dense and MoE checkpoints share the model_type; mlx-lm splits the shared MLP
// of the dense ones only.
Result<bool> has_experts(const model::Checkpoint& ck) {
  if (ck.config().model_type() != "granitemoehybrid") return false;
  RECUR_ASSIGN_OR_RETURN(const std::int64_t n, ck.config().get_int("num_local_experts", 8));
  return n > 0;
}

// The input must be an unquantized Hugging Face checkpoint of float tensors.
Status check_source(const model::Checkpoint& ck) {
  for (const char* key : {"quantization", "quantization_config"}) {
    if (ck.config().has(key)) {
      return Error(StatusCode::kInvalidArgument,
                   "{} is already quantized (config.json has \"{}\"); quantize reads unquantized "
                   "bf16, f16 or f32 checkpoints",
                   ck.dir(), key);
    }
  }
  for (const std::string& name : ck.names()) {
    const model::TensorInfo& t = *ck.find(name);
    if (name.ends_with(".scales")) {
      return Error(StatusCode::kInvalidArgument,
                   "{} is already quantized (it has the tensor {}); quantize reads unquantized "
                   "bf16, f16 or f32 checkpoints",
                   ck.dir(), name);
    }
    if (!t.dtype.has_value()) {
      return Error(StatusCode::kInvalidArgument,
                   "tensor {} is {}; quantize reads bf16, f16 or f32 checkpoints", name,
                   t.dtype_text);
    }
    if (name.find("conv1d.weight") != std::string::npos && t.shape.size() == 3 && t.shape[2] == 1) {
      return Error(StatusCode::kInvalidArgument,
                   "{} is already in MLX layout (tensor {} is {}, channels last, so its norms "
                   "are folded too); quantize reads Hugging Face checkpoints",
                   ck.dir(), name, model::shape_to_string(t.shape));
    }
  }
  return Status::ok();
}

Status check_not_same_dir(const std::string& in_dir, const std::string& out_dir) {
  std::error_code ec;
  const fs::path in = fs::weakly_canonical(in_dir, ec), out = fs::weakly_canonical(out_dir, ec);
  if (!ec && in == out) {
    return Error(StatusCode::kInvalidArgument,
                 "the output directory {} is the input checkpoint; choose another --out", out_dir);
  }
  return Status::ok();
}

// Files of the input that are not copied: the weights and config written anew, other weight
// formats (a converted checkpoint has no use for them), hidden files.
bool is_copied(const fs::path& file) {
  const std::string name = file.filename().string();
  constexpr std::array<std::string_view, 9> kWeightSuffixes = {
      ".safetensors", ".safetensors.index.json", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack",
      ".onnx"};
  if (name == "config.json" || name.starts_with(".")) return false;
  for (std::string_view suffix : kWeightSuffixes) {
    if (name.ends_with(suffix)) return false;
  }
  return true;
}

struct Copied {
  int n_files = 0;
  std::int64_t n_bytes = 0;
};

Result<Copied> copy_other_files(const fs::path& in, const fs::path& out) {
  Copied copied;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(in, ec)) {
    if (!e.is_regular_file(ec) || !is_copied(e.path())) continue;
    fs::copy_file(e.path(), out / e.path().filename(), ec);
    if (ec) return Error(StatusCode::kIo, "copying {}: {}", e.path().string(), ec.message());
    copied.n_bytes += static_cast<std::int64_t>(e.file_size(ec));
    ++copied.n_files;
  }
  if (ec) return Error(StatusCode::kIo, "listing {}: {}", in.string(), ec.message());
  return copied;
}

// Drops the whole pages of [p, p + n) from this process's view of the read-only input mapping:
// they are read once, and without this the resident size would grow to the whole input (the
// page cache keeps them; a later touch maps them again).
void release_pages(const std::uint8_t* p, std::size_t n) {
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Row-major elements [begin, begin + out.size()) of a mapped tensor as f32 (exact).
void read_as_f32(const model::TensorInfo& t, std::int64_t begin, std::span<float> out) {
  const DType dtype = *t.dtype;
  const std::uint8_t* p = t.data + begin * dtype_bytes(dtype);
  if (dtype == DType::kF32) {
    std::memcpy(out.data(), p, out.size_bytes());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  release_pages(p, out.size() * static_cast<std::size_t>(dtype_bytes(dtype)));
}

}  // namespace

Status quantize_checkpoint(const std::string& in_dir, const std::string& out_dir, int bits,
                           int group_size, QuantizeSummary* summary) {
  const auto start = std::chrono::steady_clock::now();
  RECUR_RETURN_IF_ERROR(check_quant_format(bits, group_size));
  RECUR_ASSIGN_OR_RETURN(const model::Checkpoint ck, model::Checkpoint::open(in_dir));
  RECUR_RETURN_IF_ERROR(check_model_type(ck));
  RECUR_RETURN_IF_ERROR(check_source(ck));
  RECUR_ASSIGN_OR_RETURN(const bool experts, has_experts(ck));
  RECUR_ASSIGN_OR_RETURN(const bool tied, ck.config().get_bool("tie_word_embeddings", false));
  RECUR_ASSIGN_OR_RETURN(const MlxRules rules,
                         mlx_rules_for(ck.config().model_type(), experts, tied,
                                       {.bits = bits, .group_size = group_size}));
  RECUR_ASSIGN_OR_RETURN(const std::string config_text,
                         read_file((fs::path(in_dir) / "config.json").string()));
  // Checked before planning; written with the overrides the plan finds.
  RECUR_RETURN_IF_ERROR(add_quantization_config(config_text, rules.format).status());
  RECUR_RETURN_IF_ERROR(check_not_same_dir(in_dir, out_dir));

  QuantizeSummary done;
  std::vector<const model::TensorInfo*> sources;
  std::vector<HfTensor> inputs;
  for (const std::string& name : ck.names()) {
    const model::TensorInfo& t = *ck.find(name);
    sources.push_back(&t);
    inputs.push_back({.name = name, .shape = t.shape, .dtype = *t.dtype});
  }
  const MlxPlan plan = plan_mlx(rules, inputs);
  for (const MlxTensor& m : plan.tensors) {
    done.n_quantized += m.action == MlxAction::kQuantize;
    done.n_dropped += m.action == MlxAction::kDrop;
    done.n_kept += m.action == MlxAction::kCopy || m.action == MlxAction::kFoldOne;
    if (m.not_divisible) done.not_divisible.push_back(m.name);
  }
  done.in_bytes = static_cast<std::int64_t>(ck.n_weight_bytes());
  RECUR_ASSIGN_OR_RETURN(
      const std::string config,
      add_quantization_config(config_text, rules.format, mlx_overrides(plan.tensors)));

  RECUR_ASSIGN_OR_RETURN(OutputDir out, OutputDir::begin(out_dir));
  // The pace in bytes of the input read (reads run on the writer's pool: Progress is thread-safe).
  Progress progress("quantizing " + in_dir, done.in_bytes, ProgressUnit::kBytes);
  const InputReadFn read_input = [&](std::size_t i, std::int64_t begin, std::span<float> values) {
    read_as_f32(*sources[i], begin, values);
    std::int64_t n_elems = 1;
    for (std::int64_t d : sources[i]->shape) n_elems *= d;
    const auto elem_bytes =
        static_cast<std::int64_t>(sources[i]->n_bytes) / std::max<std::int64_t>(1, n_elems);
    progress.add(static_cast<std::int64_t>(values.size()) * elem_bytes);
  };
  const SourceReadFn read = [&](std::size_t t, std::int64_t begin, std::span<float> values) {
    read_planned(plan, t, begin, values, read_input);
  };
  MlxWriteSummary written;
  const Status wrote = write_mlx_weights(out.tmp().string(), plan.tensors, read, 0, &written);
  progress.finish(wrote.is_ok() ? "done" : "failed");
  RECUR_RETURN_IF_ERROR(wrote);
  RECUR_RETURN_IF_ERROR(write_file_atomic((out.tmp() / "config.json").string(), config));
  RECUR_ASSIGN_OR_RETURN(const Copied copied, copy_other_files(in_dir, out.tmp()));
  RECUR_RETURN_IF_ERROR(out.commit());
  done.out_bytes = written.n_bytes + static_cast<std::int64_t>(config.size()) + copied.n_bytes;
  done.n_files = written.n_files + 1 + copied.n_files;
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (summary != nullptr) *summary = std::move(done);
  return Status::ok();
}

}  // namespace recur::convert
