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
// Row r starts at data + r * cols * dtype_bytes(dtype). Non-owning.
struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::int64_t rows = 0;  // N, output features
  std::int64_t cols = 0;  // K, input features

  // Rows [begin, begin + n) as a view of their own.
  WeightView slice_rows(std::int64_t begin, std::int64_t n) const {
    return {static_cast<const char*>(data) + begin * cols * dtype_bytes(dtype), dtype, n, cols};
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
