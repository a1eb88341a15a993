// Test helper: a quantized matrix in MLX's layout and packed for the kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/quant.h"

namespace recur::kernels::testing {

// A quantized matrix in MLX's layout (as a checkpoint holds it) and packed (as the kernels read
// it).
struct OwnedQuant {
  std::vector<std::uint32_t> codes;
  std::vector<std::uint8_t> scales, biases;
  MlxQuantized mlx;
  std::vector<std::uint8_t> packed;
  WeightView view;
};

inline OwnedQuant quantize(const std::vector<float>& w, std::int64_t rows, std::int64_t cols,
                           int bits, int gs, DType dtype) {
  OwnedQuant q;
  q.codes.resize(static_cast<std::size_t>(rows * cols * bits / 32));
  const auto sb = static_cast<std::size_t>(rows * (cols / gs) * dtype_bytes(dtype));
  q.scales.resize(sb);
  q.biases.resize(sb);
  quantize_rows(w.data(), rows, cols, bits, gs, dtype, q.codes.data(), q.scales.data(),
                q.biases.data());
  q.mlx = {.codes = q.codes.data(),
           .scales = q.scales.data(),
           .biases = q.biases.data(),
           .dtype = dtype,
           .rows = rows,
           .cols = cols,
           .bits = bits,
           .group_size = gs};
  q.view = packed_view(q.mlx, nullptr);
  q.packed.assign(static_cast<std::size_t>(q.view.total_bytes()), 0xAB);  // padding must be written
  q.view.data = q.packed.data();
  pack_quantized_rows(q.mlx, 0, rows, q.view);
  return q;
}

}  // namespace recur::kernels::testing
