// Test helper: a quantized matrix in MLX's layout and packed for the kernels, and an MXFP4 one as
// released and packed.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
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

// An MXFP4 matrix as gpt-oss releases it (blocks [rows, cols/32, 16], e8m0 scales [rows, cols/32])
// and packed. Codes are uniform; scales uniform in [scale_lo, scale_hi], except that every
// `odd_every`-th group (0: none) takes one of `odd` instead (edge exponents).
struct OwnedMxfp4 {
  std::vector<std::uint8_t> blocks, scales;
  Mxfp4Matrix m;
  std::vector<std::uint8_t> packed;
  WeightView view;
};

inline OwnedMxfp4 make_mxfp4(std::int64_t rows, std::int64_t cols, std::uint32_t seed,
                             int scale_lo = 118, int scale_hi = 132,
                             const std::vector<std::uint8_t>& odd = {}, int odd_every = 0) {
  OwnedMxfp4 q;
  std::mt19937 rng(seed);
  q.blocks.resize(static_cast<std::size_t>(rows * cols / 2));
  for (auto& b : q.blocks) b = static_cast<std::uint8_t>(rng());
  q.scales.resize(static_cast<std::size_t>(rows * cols / 32));
  std::uniform_int_distribution<int> scale(scale_lo, scale_hi);
  for (std::size_t i = 0; i < q.scales.size(); ++i) {
    q.scales[i] = static_cast<std::uint8_t>(scale(rng));
    if (odd_every > 0 && i % static_cast<std::size_t>(odd_every) == 0 && !odd.empty()) {
      q.scales[i] = odd[(i / static_cast<std::size_t>(odd_every)) % odd.size()];
    }
  }
  q.m = {.blocks = q.blocks.data(), .scales = q.scales.data(), .rows = rows, .cols = cols};
  q.view = mxfp4_packed_view(rows, cols, nullptr);
  q.packed.assign(static_cast<std::size_t>(q.view.total_bytes()), 0xAB);  // padding must be written
  q.view.data = q.packed.data();
  EXPECT_TRUE(pack_mxfp4_rows(q.m, 0, rows, q.view));
  return q;
}

}  // namespace recur::kernels::testing
