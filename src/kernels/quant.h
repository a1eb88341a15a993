// Affine group quantization in MLX's layout (mlx.core.quantize, mode "affine"), the format of
// mlx-community "-4bit"/"-8bit" checkpoints and of `recur quantize` / `--quantize`:
//   per output row, every `group_size` consecutive inputs share a scale s and a bias b, and
//   w[i] ≈ s·q[i] + b with q[i] in [0, 2^bits − 1], packed little-endian into uint32 words
//   (element j of a row in word j·bits/32, from bit (j·bits) mod 32 up).
// And the arithmetic of a quantized Linear (docs/quantization.md): each activation row is
// quantized to int8 in blocks of the weight's group size (scale absmax/127), so a group's dot
// product is an exact integer sum and the rest is a few f32 operations per group.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/dtype.h"
#include "util/thread_pool.h"

namespace recur::kernels {

// The formats recur computes with: 4 or 8 bits, groups of 32, 64 or 128.
bool quant_format_supported(int bits, int group_size);

// Element j of a packed row.
inline std::uint32_t quant_code(const std::uint32_t* row, int bits, std::int64_t j) {
  const std::int64_t bit = j * bits;
  return (row[bit / 32] >> (bit % 32)) & ((1u << bits) - 1u);
}

// Quantizes `rows` rows of `cols` f32 weights the way MLX's CPU backend does (per group: the
// scale spans min..max and is nudged so that the edge of larger magnitude is exactly a code;
// q = clamp(rint((w − b) / s))). Writes codes [rows, cols·bits/32], and scales and biases
// [rows, cols/group_size] as `scale_dtype` (rounded to nearest even). cols % group_size == 0.
void quantize_rows(const float* w, std::int64_t rows, std::int64_t cols, int bits, int group_size,
                   DType scale_dtype, std::uint32_t* codes, void* scales, void* biases);

// Row r of a quantized view as f32 (s·q + b, in f32), cols values.
void dequantize_row(const WeightView& w, std::int64_t r, float* out);

// One activation row quantized for a quantized matmul, blocks of `group_size` inputs:
// q[i] = rint(x[i] · 127/absmax) in [−127, 127], d = absmax/127 (0 when absmax is 0), and
// xsum = d · Σ q over the block (the bias term's weight). Fixed arithmetic on every ISA.
struct QuantizedActivations {
  std::int8_t* q = nullptr;  // [cols]
  float* d = nullptr;        // [cols / group_size]
  float* xsum = nullptr;     // [cols / group_size]
};
void quantize_activation_row(const float* x, std::int64_t cols, int group_size,
                             const QuantizedActivations& out);

// Several quantized Linears over the same f32 x [n_rows, cols] (kernels::matmul_fused routes the
// quantized ones here): y[i] [n_rows, outs[i].w.rows]. Rows are independent of each other.
struct MatmulOut;
void matmul_quantized(ThreadPool& pool, const float* x, std::int64_t n_rows,
                      std::span<const MatmulOut> outs);

namespace ref {
// y[r, n] for outputs n of w (quantized) and activation rows already quantized (row r's blocks at
// a.q + r·cols, a.d + r·groups, a.xsum + r·groups):
//   y = Σ_g (s_g·d_g)·Σ_{i∈g} q_w[i]·q_x[i]  +  Σ_g b_g·xsum_g,  both sums over g in order.
void matmul_quant(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w, float* y,
                  std::int64_t ldy);
}  // namespace ref

}  // namespace recur::kernels
