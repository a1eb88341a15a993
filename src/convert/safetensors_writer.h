// Writes safetensors files the way Hugging Face's writer lays them out: 8-byte little-endian
// header length, a JSON header padded with spaces to a multiple of 8, then the tensors' data in
// (dtype size descending, name) order. Data is produced block by block (or job by job) by a
// callback on a thread pool and written with pwrite, so no tensor is ever held whole in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace recur::convert {

struct TensorEntry {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kBF16;
  // Packed MLX quantization codes (mlx_layout.h): "U32" words of 4 bytes; dtype is then unused.
  bool u32 = false;
  // Raw bytes (MXFP4's blocks and scales, gpt-oss): "U8"; the fill's values are the bytes'
  // integers 0..255.
  bool u8 = false;
  std::int64_t n_elems() const;
  std::int64_t elem_bytes() const { return u32 ? 4 : u8 ? 1 : dtype_bytes(dtype); }
  std::int64_t n_bytes() const { return n_elems() * elem_bytes(); }
};

const char* safetensors_dtype(DType dtype);           // "BF16", "F16", "F32"
const char* safetensors_dtype(const TensorEntry& e);  // the above, "U32" or "U8"

// Converts src into dst (little-endian, dtype_bytes(dtype) bytes per element).
void convert_from_f32(std::span<const float> src, DType dtype, std::byte* dst);

// One safetensors file: which tensors it holds, where their data starts, its header.
struct ShardLayout {
  std::string file_name;
  std::vector<std::size_t> tensors;        // indices into the entries, in data order
  std::vector<std::int64_t> data_offsets;  // start of each tensor's data, after the header
  std::string header;                      // JSON, already padded to a multiple of 8
  std::int64_t data_bytes = 0;
  std::int64_t file_bytes() const {
    return 8 + static_cast<std::int64_t>(header.size()) + data_bytes;
  }
};

// Splits the entries (kept in their given order) into n_shards files of about equal size, named
// model.safetensors (one shard) or model-0000i-of-0000n.safetensors. Every header's
// __metadata__ is {"format": format}: "pt" as transformers writes, "mlx" as mlx-lm writes.
Result<std::vector<ShardLayout>> plan_shards(std::span<const TensorEntry> entries, int n_shards,
                                             std::string_view format = "pt");

// model.safetensors.index.json: metadata.total_size (and total_parameters when given, as mlx-lm
// writes it) and the sorted weight_map.
std::string index_json(std::span<const TensorEntry> entries, std::span<const ShardLayout> shards,
                       std::int64_t total_parameters = 0);

// Elements are produced in blocks of kBlockElems (the last block of a tensor may be shorter):
// fill(tensor_idx, block_idx, out) writes elements [block_idx * kBlockElems, ... + out.size()).
// Each block must depend only on its arguments, so the file is the same for any thread count.
inline constexpr std::int64_t kBlockElems = 1 << 18;
using FillFn =
    std::function<void(std::size_t tensor_idx, std::int64_t block_idx, std::span<float>)>;

Status write_shard(const std::string& path, const ShardLayout& shard,
                   std::span<const TensorEntry> entries, const FillFn& fill, ThreadPool& pool);

// The general form, for tensors whose bytes are produced together (a quantized weight's codes,
// scales and biases come from the same rows): job(i, emit) for i in [0, n_jobs) runs on the pool
// and hands bytes to emit(entry_idx, byte offset within that tensor, bytes), which writes them at
// their place in whichever shard holds the entry. Jobs must cover every byte of every entry and
// depend only on their index, so the files are the same for any thread count.
using EmitFn = std::function<Status(std::size_t entry_idx, std::int64_t byte_offset,
                                    std::span<const std::byte> bytes)>;
using JobFn = std::function<Status(std::size_t job_idx, const EmitFn& emit)>;
Status write_shards(const std::string& dir, std::span<const ShardLayout> shards,
                    std::span<const TensorEntry> entries, std::size_t n_jobs, const JobFn& job,
                    ThreadPool& pool);

}  // namespace recur::convert
