// A Hugging Face checkpoint directory opened for reading: config.json, every safetensors shard
// memory-mapped (through model.safetensors.index.json when present, else every *.safetensors),
// and the eos ids of config.json + generation_config.json. Tensors are views into the mappings.
// Not family-aware: families say which tensors they need (family.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/config_json.h"
#include "model/safetensors.h"
#include "util/mmap_file.h"
#include "util/status.h"

namespace recur::model {

class Checkpoint {
 public:
  static Result<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const ConfigJson& config() const { return config_; }
  // Union of config.json and generation_config.json eos ids, in first-seen order.
  const std::vector<std::int64_t>& eos_ids() const { return eos_ids_; }
  // nullptr when absent.
  const TensorInfo* find(std::string_view name) const;
  std::size_t n_tensors() const { return by_name_.size(); }
  // Every tensor name in the checkpoint, sorted.
  std::vector<std::string> names() const;
  // Identity of config + tensor headers + a sample of every tensor's bytes (stable, cheap).
  std::uint64_t content_hash() const { return content_hash_; }
  std::size_t n_weight_bytes() const;
  // Written by MLX (safetensors metadata format "mlx"): its conventions apply (norms of families
  // that use 1 + w already hold 1 + w; conv kernels may be channels-last), docs/quantization.md.
  bool mlx_format() const { return mlx_format_; }

 private:
  Status add_shard(const std::string& path);
  void compute_content_hash();

  std::string dir_;
  ConfigJson config_;
  std::vector<std::int64_t> eos_ids_;
  // unique_ptr keeps TensorInfo pointers stable as shards are added.
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::unique_ptr<SafetensorsHeader>> headers_;
  std::map<std::string, const TensorInfo*, std::less<>> by_name_;
  std::uint64_t content_hash_ = 0;
  bool mlx_format_ = false;
};

}  // namespace recur::model
