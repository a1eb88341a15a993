// Jobs of an MLX checkpoint: floating tensors in blocks of kBlockElems values, quantized weights
// in chunks of whole rows (a group never straddles two jobs).
#include "convert/mlx_writer.h"

#include <algorithm>
#include <vector>

#include "kernels/quant.h"
#include "util/check.h"
#include "util/mmap_file.h"
#include "util/thread_pool.h"

namespace recur::convert {

namespace {

// Values per quantization job: a few blocks, so a generated source (which makes values a whole
// block at a time) regenerates at most one block in four at the edges of a job.
constexpr std::int64_t kQuantJobElems = 4 * kBlockElems;

struct Job {
  std::size_t tensor = 0;
  std::size_t entry = 0;   // the tensor's first entry (a quantized weight's codes)
  std::int64_t begin = 0;  // first element (floating) or row (quantized)
  std::int64_t count = 0;  // elements or rows
};

std::vector<Job> plan_jobs(std::span<const MlxTensor> tensors, std::span<const std::size_t> first) {
  std::vector<Job> jobs;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const MlxTensor& m = tensors[t];
    if (m.action == MlxAction::kDrop) continue;
    std::int64_t n = 1, step = kBlockElems;
    if (m.action == MlxAction::kQuantize) {  // rows over every leading dim (stacked experts)
      n = m.shape[0] * (m.shape.size() == 3 ? m.shape[1] : 1);
      step = std::max<std::int64_t>(1, kQuantJobElems / m.shape.back());
    } else {
      for (std::int64_t d : m.shape) n *= d;
    }
    for (std::int64_t at = 0; at < n; at += step) {
      jobs.push_back({t, first[t], at, std::min(step, n - at)});
    }
  }
  return jobs;
}

std::span<const std::byte> as_bytes(const void* data, std::int64_t n) {
  return {static_cast<const std::byte*>(data), static_cast<std::size_t>(n)};
}

// Values [begin, begin + count) of a floating tensor, 1 + w for a folded norm.
Status run_float_job(const Job& job, const MlxTensor& m, const SourceReadFn& read,
                     const EmitFn& emit) {
  thread_local std::vector<float> values;
  thread_local std::vector<std::byte> bytes;
  values.resize(static_cast<std::size_t>(job.count));
  bytes.resize(values.size() * static_cast<std::size_t>(dtype_bytes(m.dtype)));
  read(job.tensor, job.begin, values);
  if (m.action == MlxAction::kFoldOne) {
    for (float& v : values) v += 1.0f;
  }
  convert_from_f32(values, m.dtype, bytes.data());
  return emit(job.entry, job.begin * dtype_bytes(m.dtype), bytes);
}

// Rows [begin, begin + count) of a quantized weight: codes, scales and biases.
Status run_quant_job(const Job& job, const MlxTensor& m, const SourceReadFn& read,
                     const EmitFn& emit) {
  const QuantFormat& f = m.format;
  thread_local std::vector<float> values;
  thread_local std::vector<std::uint32_t> codes;
  thread_local std::vector<std::byte> scales, biases;
  const std::int64_t cols = m.shape.back(), groups = cols / f.group_size;
  const std::int64_t words = cols * f.bits / 32, scale_bytes = groups * dtype_bytes(m.dtype);
  values.resize(static_cast<std::size_t>(job.count * cols));
  codes.resize(static_cast<std::size_t>(job.count * words));
  scales.resize(static_cast<std::size_t>(job.count * scale_bytes));
  biases.resize(scales.size());
  read(job.tensor, job.begin * cols, values);
  kernels::quantize_rows(values.data(), job.count, cols, f.bits, f.group_size, m.dtype,
                         codes.data(), scales.data(), biases.data());
  RECUR_RETURN_IF_ERROR(
      emit(job.entry, job.begin * words * 4, as_bytes(codes.data(), job.count * words * 4)));
  RECUR_RETURN_IF_ERROR(emit(job.entry + 1, job.begin * scale_bytes, scales));
  return emit(job.entry + 2, job.begin * scale_bytes, biases);
}

}  // namespace

Status write_mlx_weights(const std::string& dir, std::span<const MlxTensor> tensors,
                         const SourceReadFn& read, int n_shards, MlxWriteSummary* summary) {
  std::vector<TensorEntry> entries;
  std::vector<std::size_t> first(tensors.size());
  MlxWriteSummary written;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    first[t] = entries.size();
    append_mlx_entries(tensors[t], entries);
    if (tensors[t].action == MlxAction::kDrop) continue;
    std::int64_t n = 1;
    for (std::int64_t d : tensors[t].shape) n *= d;
    written.n_params += n;
  }
  if (entries.empty()) return Error(StatusCode::kInvalidArgument, "no tensors to write");
  if (n_shards == 0) {
    std::int64_t total = 0;
    for (const TensorEntry& e : entries) total += e.n_bytes();
    n_shards = static_cast<int>(std::min<std::int64_t>(
        (total + kMlxMaxShardBytes - 1) / kMlxMaxShardBytes, std::ssize(entries)));
    n_shards = std::max(n_shards, 1);
  }
  RECUR_ASSIGN_OR_RETURN(std::vector<ShardLayout> shards,
                         plan_shards(entries, n_shards, kMlxFormat));
  const std::vector<Job> jobs = plan_jobs(tensors, first);
  ThreadPool pool(available_cores());
  const JobFn run = [&](std::size_t i, const EmitFn& emit) {
    const Job& job = jobs[i];
    const MlxTensor& m = tensors[job.tensor];
    if (m.action == MlxAction::kQuantize) return run_quant_job(job, m, read, emit);
    return run_float_job(job, m, read, emit);
  };
  RECUR_RETURN_IF_ERROR(write_shards(dir, shards, entries, jobs.size(), run, pool));
  const std::string index = index_json(entries, shards, written.n_params);
  RECUR_RETURN_IF_ERROR(write_file_atomic(dir + "/model.safetensors.index.json", index));
  for (const ShardLayout& shard : shards) written.n_bytes += shard.file_bytes();
  written.n_bytes += static_cast<std::int64_t>(index.size());
  written.n_files = static_cast<int>(shards.size()) + 1;
  if (summary != nullptr) *summary = written;
  return Status::ok();
}

}  // namespace recur::convert
