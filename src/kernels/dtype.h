// The non-owning view of a weight matrix the kernels read in place (memory-mapped, never copied).
// The element types and their exact conversions are util's (util/dtype.h), named here too.
#pragma once

#include <cstdint>
#include <cstring>

#include "util/check.h"
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
// Affine-quantized (bits != 0; kernels/quant.h): data holds recur's packed layout, blocks of
// kQuantBlockRows rows that the quantized matmul reads front to back, each group of
// `group_size` inputs holding the block's codes, then its rows' scales and biases (in `dtype`):
// w = scale·q + bias. Slices of a quantized view start on a block.
// `codes` says what a 4-bit code stands for: kAffine, the unsigned q itself (MLX's format);
// kMxfp4, an OCP MX e2m1 index c, which the arithmetic reads as q = kMxfp4AffineCodes[c]
// (kernels/quant.h: bits 4, groups of 32, bf16 scales and biases only).
enum class QuantCodes : std::uint8_t { kAffine, kMxfp4 };

struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::kF32;  // the elements' type, or the scales' and biases' when quantized
  std::int64_t rows = 0;      // N, output features
  std::int64_t cols = 0;      // K, input features
  int bits = 0;               // 0: plain dtype elements; 4 or 8: quantized codes
  int group_size = 0;
  QuantCodes codes = QuantCodes::kAffine;  // quantized views: what the 4-bit codes stand for

  static constexpr std::int64_t kQuantBlockRows = 16;

  bool quantized() const { return bits != 0; }
  // Plain views: the bytes of a row.
  std::int64_t row_bytes() const { return cols * dtype_bytes(dtype); }
  // Quantized views: scales (and biases) per row, and the bytes of one group of a block and of a
  // whole block of kQuantBlockRows rows.
  std::int64_t groups() const { return quantized() ? cols / group_size : 0; }
  std::int64_t group_record_bytes() const {
    return kQuantBlockRows * (group_size * bits / 8 + 2 * dtype_bytes(dtype));
  }
  std::int64_t block_bytes() const { return groups() * group_record_bytes(); }
  // Bytes of the whole matrix in memory (quantized: the last block padded to kQuantBlockRows).
  std::int64_t total_bytes() const {
    return quantized() ? (rows + kQuantBlockRows - 1) / kQuantBlockRows * block_bytes()
                       : rows * row_bytes();
  }

  // Rows [begin, begin + n) as a view of their own (quantized: begin a multiple of
  // kQuantBlockRows, or the view would start inside a block).
  WeightView slice_rows(std::int64_t begin, std::int64_t n) const {
    RECUR_CHECK(!quantized() || begin % kQuantBlockRows == 0);
    WeightView v = *this;
    v.data = static_cast<const char*>(data) +
             (quantized() ? begin / kQuantBlockRows * block_bytes() : begin * row_bytes());
    v.rows = n;
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
