// The non-owning view of a weight matrix the kernels read in place (memory-mapped, never copied).
// The element types and their exact conversions are util's (util/dtype.h), named here too.
#pragma once

#include <cstdint>
#include <cstring>

#include "util/dtype.h"

namespace recur::kernels {

using recur::bf16_to_f32;
using recur::DType;
using recur::dtype_bytes;
using recur::dtype_name;
using recur::f16_to_f32;
using recur::f32_to_bf16;
using recur::f32_to_f16;
using recur::round_to_bf16;

// A row-major matrix [rows, cols] = [out features, in features] as HF stores Linear weights.
// Row r starts at data + r * row_bytes(). Non-owning.
// Affine-quantized (bits != 0, MLX layout, kernels/quant.h): data holds each row's `bits`-bit
// codes packed little-endian into uint32 words, and every `group_size` consecutive inputs of a
// row share a scale and a bias ([rows, cols / group_size] each, in `dtype`): w = scale·q + bias.
struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::kF32;  // the elements' type, or the scales' and biases' when quantized
  std::int64_t rows = 0;      // N, output features
  std::int64_t cols = 0;      // K, input features
  int bits = 0;               // 0: plain dtype elements; 4 or 8: quantized codes
  int group_size = 0;
  const void* scales = nullptr;
  const void* biases = nullptr;

  bool quantized() const { return bits != 0; }
  std::int64_t row_bytes() const {
    return quantized() ? cols * bits / 8 : cols * dtype_bytes(dtype);
  }
  // Scales (and biases) per row.
  std::int64_t groups() const { return quantized() ? cols / group_size : 0; }

  // Rows [begin, begin + n) as a view of their own.
  WeightView slice_rows(std::int64_t begin, std::int64_t n) const {
    WeightView v = *this;
    v.data = static_cast<const char*>(data) + begin * row_bytes();
    v.rows = n;
    if (quantized()) {
      const std::int64_t skip = begin * groups() * dtype_bytes(dtype);
      v.scales = static_cast<const char*>(scales) + skip;
      v.biases = static_cast<const char*>(biases) + skip;
    }
    return v;
  }
};

// Element i of a row of `dtype` as f32.
inline float load_as_f32(const void* row, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(row)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const std::uint16_t*>(row)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const std::uint16_t*>(row)[i]);
  }
  return 0.0f;
}

}  // namespace recur::kernels
