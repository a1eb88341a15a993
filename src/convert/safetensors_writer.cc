// safetensors layout, dtype conversion and the parallel streaming writer.
#include "convert/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "util/check.h"

namespace recur::convert {

std::int64_t TensorEntry::n_elems() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kF32:
      return "F32";
  }
  return "?";
}

const char* safetensors_dtype(const TensorEntry& e) {
  return e.u32 ? "U32" : e.u8 ? "U8" : safetensors_dtype(e.dtype);
}

void convert_from_f32(std::span<const float> src, DType dtype, std::byte* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src.data(), src.size_bytes());
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < src.size(); ++i) {
        const std::uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < src.size(); ++i) {
        const std::uint16_t h = f32_to_f16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
  }
}

namespace {

std::string shard_file_name(int idx, int n_shards) {
  if (n_shards == 1) return "model.safetensors";
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", idx + 1, n_shards);
}

// safetensors' own writer orders data by dtype (its enum, descending: F32, U32, BF16, F16, U8),
// then by name.
int dtype_rank(const TensorEntry& e) {
  if (e.u32) return 1;
  if (e.u8) return 4;
  return e.dtype == DType::kF32 ? 0 : e.dtype == DType::kBF16 ? 2 : 3;
}

// Orders the data, builds the header and pads it with spaces so the data starts 8-aligned.
void layout_shard(std::span<const TensorEntry> entries, std::string_view format,
                  ShardLayout& shard) {
  std::stable_sort(shard.tensors.begin(), shard.tensors.end(), [&](std::size_t a, std::size_t b) {
    const int ra = dtype_rank(entries[a]), rb = dtype_rank(entries[b]);
    if (ra != rb) return ra < rb;
    return entries[a].name < entries[b].name;
  });
  std::string header =
      fmt::format(R"({{"__metadata__":{{"format":{}}})", nlohmann::json(format).dump());
  std::int64_t offset = 0;
  for (std::size_t idx : shard.tensors) {
    const TensorEntry& e = entries[idx];
    shard.data_offsets.push_back(offset);
    header += fmt::format(R"(,{}:{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})",
                          nlohmann::json(e.name).dump(), safetensors_dtype(e),
                          fmt::join(e.shape, ","), offset, offset + e.n_bytes());
    offset += e.n_bytes();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  shard.header = std::move(header);
  shard.data_bytes = offset;
}

}  // namespace

Result<std::vector<ShardLayout>> plan_shards(std::span<const TensorEntry> entries, int n_shards,
                                             std::string_view format) {
  const auto n_tensors = static_cast<int>(entries.size());
  if (n_shards < 1 || n_shards > n_tensors) {
    return Error(StatusCode::kInvalidArgument, "cannot split {} tensors into {} shards", n_tensors,
                 n_shards);
  }
  std::int64_t total = 0;
  for (const auto& e : entries) total += e.n_bytes();
  const std::int64_t target = (total + n_shards - 1) / n_shards;
  std::vector<ShardLayout> shards(static_cast<std::size_t>(n_shards));
  int s = 0;
  std::int64_t bytes = 0;
  for (int i = 0; i < n_tensors; ++i) {
    const std::int64_t size = entries[static_cast<std::size_t>(i)].n_bytes();
    const int shards_after = n_shards - 1 - s;
    const bool full = bytes > 0 && bytes + size > target;
    const bool must = bytes > 0 && n_tensors - i == shards_after;  // one tensor per shard left
    if ((full || must) && shards_after > 0) {
      ++s;
      bytes = 0;
    }
    shards[static_cast<std::size_t>(s)].tensors.push_back(static_cast<std::size_t>(i));
    bytes += size;
  }
  for (int i = 0; i < n_shards; ++i) {
    auto& shard = shards[static_cast<std::size_t>(i)];
    shard.file_name = shard_file_name(i, n_shards);
    layout_shard(entries, format, shard);
  }
  return shards;
}

std::string index_json(std::span<const TensorEntry> entries, std::span<const ShardLayout> shards,
                       std::int64_t total_parameters) {
  nlohmann::json weight_map = nlohmann::json::object();
  std::int64_t total = 0;
  for (const auto& shard : shards) {
    for (std::size_t idx : shard.tensors) weight_map[entries[idx].name] = shard.file_name;
    total += shard.data_bytes;
  }
  nlohmann::json metadata = {{"total_size", total}};
  if (total_parameters > 0) metadata["total_parameters"] = total_parameters;
  nlohmann::json index = {{"metadata", metadata}, {"weight_map", weight_map}};
  return index.dump(2) + "\n";
}

namespace {

struct Block {
  std::size_t pos;  // position in shard.tensors
  std::int64_t block_idx;
};

Status write_all(int fd, const void* data, std::size_t n, std::int64_t offset,
                 const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, offset);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error(StatusCode::kIo, "writing {}: {}", path, std::strerror(errno));
    p += w;
    n -= static_cast<std::size_t>(w);
    offset += w;
  }
  return Status::ok();
}

}  // namespace

namespace {

Status write_header(int fd, const std::string& header, const std::string& path) {
  const std::uint64_t header_len = header.size();
  unsigned char len_le[8];
  for (int i = 0; i < 8; ++i) len_le[i] = static_cast<unsigned char>(header_len >> (8 * i));
  RECUR_RETURN_IF_ERROR(write_all(fd, len_le, 8, 0, path));
  return write_all(fd, header.data(), header.size(), 8, path);
}

// Fills, converts and writes one block at its place in the file (offset = the tensor's start).
Status write_block(int fd, const std::string& path, const TensorEntry& e, std::int64_t offset,
                   std::int64_t block_idx, const std::function<void(std::span<float>)>& fill) {
  thread_local std::vector<float> values;  // one block per worker thread, reused
  thread_local std::vector<std::byte> bytes;
  RECUR_CHECK(!e.u32);
  const std::int64_t first = block_idx * kBlockElems;
  const auto n = static_cast<std::size_t>(std::min(kBlockElems, e.n_elems() - first));
  values.resize(n);
  bytes.resize(n * static_cast<std::size_t>(e.elem_bytes()));
  fill(std::span<float>(values.data(), n));
  if (e.u8) {
    for (std::size_t i = 0; i < n; ++i) {
      bytes[i] = static_cast<std::byte>(std::clamp(std::lround(values[i]), 0L, 255L));
    }
  } else {
    convert_from_f32(values, e.dtype, bytes.data());
  }
  return write_all(fd, bytes.data(), bytes.size(), offset + first * e.elem_bytes(), path);
}

}  // namespace

Status write_shard(const std::string& path, const ShardLayout& shard,
                   std::span<const TensorEntry> entries, const FillFn& fill, ThreadPool& pool) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error(StatusCode::kIo, "creating {}: {}", path, std::strerror(errno));
  Status status = write_header(fd, shard.header, path);
  const std::int64_t data_start = 8 + static_cast<std::int64_t>(shard.header.size());
  std::vector<Block> blocks;
  for (std::size_t pos = 0; pos < shard.tensors.size(); ++pos) {
    const std::int64_t n = entries[shard.tensors[pos]].n_elems();
    for (std::int64_t b = 0; b * kBlockElems < n; ++b) blocks.push_back({pos, b});
  }
  std::mutex mu;
  std::atomic<bool> failed{!status.is_ok()};
  pool.run(blocks.size(), [&](std::size_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    const Block& blk = blocks[i];
    const std::size_t t = shard.tensors[blk.pos];
    Status s =
        write_block(fd, path, entries[t], data_start + shard.data_offsets[blk.pos], blk.block_idx,
                    [&](std::span<float> out) { fill(t, blk.block_idx, out); });
    if (!s.is_ok() && !failed.exchange(true)) {
      std::lock_guard lock(mu);
      status = std::move(s);
    }
  });
  if (::close(fd) != 0 && status.is_ok()) {
    status = Error(StatusCode::kIo, "closing {}: {}", path, std::strerror(errno));
  }
  return status;
}

namespace {

// The open shard files of write_shards, closed on every path out.
class OpenShards {
 public:
  ~OpenShards() {
    for (int fd : fds_) ::close(fd);
  }
  Result<int> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Error(StatusCode::kIo, "creating {}: {}", path, std::strerror(errno));
    fds_.push_back(fd);
    return fd;
  }
  // Closes every file; the first failure is the result (a full disk can surface only here).
  Status close_all(std::span<const std::string> paths) {
    Status status = Status::ok();
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      if (::close(fds_[i]) != 0 && status.is_ok()) {
        status = Error(StatusCode::kIo, "closing {}: {}", paths[i], std::strerror(errno));
      }
    }
    fds_.clear();
    return status;
  }

 private:
  std::vector<int> fds_;
};

// Where an entry's data lives: its shard's file and the file offset of its first byte.
struct Placement {
  int fd = -1;
  std::size_t shard = 0;
  std::int64_t file_offset = 0;
};

}  // namespace

Status write_shards(const std::string& dir, std::span<const ShardLayout> shards,
                    std::span<const TensorEntry> entries, std::size_t n_jobs, const JobFn& job,
                    ThreadPool& pool) {
  OpenShards files;
  std::vector<std::string> paths;
  std::vector<Placement> placement(entries.size());
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const ShardLayout& shard = shards[s];
    paths.push_back(dir + "/" + shard.file_name);
    RECUR_ASSIGN_OR_RETURN(const int fd, files.open(paths.back()));
    RECUR_RETURN_IF_ERROR(write_header(fd, shard.header, paths.back()));
    const std::int64_t data_start = 8 + static_cast<std::int64_t>(shard.header.size());
    for (std::size_t pos = 0; pos < shard.tensors.size(); ++pos) {
      placement[shard.tensors[pos]] = {fd, s, data_start + shard.data_offsets[pos]};
    }
  }
  const EmitFn emit = [&](std::size_t entry, std::int64_t byte_offset,
                          std::span<const std::byte> bytes) {
    const Placement& p = placement[entry];
    RECUR_CHECK(p.fd >= 0 && byte_offset >= 0 &&
                byte_offset + static_cast<std::int64_t>(bytes.size()) <= entries[entry].n_bytes());
    return write_all(p.fd, bytes.data(), bytes.size(), p.file_offset + byte_offset, paths[p.shard]);
  };
  std::mutex mu;
  Status status = Status::ok();
  std::atomic<bool> failed{false};
  pool.run(n_jobs, [&](std::size_t i) {
    if (failed.load(std::memory_order_relaxed)) return;
    Status s = job(i, emit);
    if (!s.is_ok() && !failed.exchange(true)) {
      std::lock_guard lock(mu);
      status = std::move(s);
    }
  });
  Status closed = files.close_all(paths);
  if (!status.is_ok()) return status;
  return closed;
}

}  // namespace recur::convert
