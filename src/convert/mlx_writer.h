// Streams the safetensors files of an MLX-layout checkpoint (mlx_layout.h): every planned tensor
// is read as f32 from its source (generated values, or a Hugging Face checkpoint's mapping) in
// blocks or row chunks on a thread pool, quantized with kernels::quantize_rows or converted back
// to its dtype, and written at its place. Never holds a whole tensor: a few MB per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "convert/mlx_layout.h"
#include "util/status.h"

namespace recur::convert {

// Writes the f32 values of source tensor `tensor`'s elements [begin, begin + out.size())
// (row-major, in the source's own layout) into out. Called from several threads at once.
using SourceReadFn =
    std::function<void(std::size_t tensor, std::int64_t begin, std::span<float> out)>;

struct MlxWriteSummary {
  std::int64_t n_params = 0;  // logical elements written (a quantized weight counts rows x cols)
  std::int64_t n_bytes = 0;   // all files written
  int n_files = 0;
};

// Writes tensors[i] (kDrop ones are skipped; quantized ones at their own format) from
// read(i, ...) into dir as n_shards safetensors files (0: as many as mlx-lm's 5 GB limit needs)
// with {"format": "mlx"} metadata, plus model.safetensors.index.json, which mlx-lm writes for any
// number of shards.
Status write_mlx_weights(const std::string& dir, std::span<const MlxTensor> tensors,
                         const SourceReadFn& read, int n_shards, MlxWriteSummary* summary);

}  // namespace recur::convert
