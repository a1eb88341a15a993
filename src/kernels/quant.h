// Affine group quantization: MLX's format on disk and recur's packed layout in memory.
//
// MLX's layout (mlx.core.quantize, mode "affine"; mlx-community "-4bit"/"-8bit" checkpoints and
// `recur quantize`): per output row, every `group_size` consecutive inputs share a scale s and a
// bias b, and w[i] ≈ s·q[i] + b with q[i] in [0, 2^bits − 1], packed little-endian into uint32
// words (element j of a row in word j·bits/32, from bit (j·bits) mod 32 up).
//
// recur's packed layout (what a quantized WeightView holds; docs/quantization.md): rows in blocks
// of 16 (kQuantBlockRows, the last one padded with zero rows), each block a run of group records
// read front to back. A group record holds the block's codes of that group in 64-byte vectors
// whose 32-bit lane l belongs to row l of the block, then the 16 rows' scales, then their biases
// (in the view's dtype):
//   8 bits: vector k holds each row's elements 4k .. 4k+3 of the group, one byte each;
//   4 bits: vector k holds each row's elements 8k .. 8k+7: byte j of a lane has element 8k+j in
//           its low nibble and element 8k+4+j in its high nibble.
// So one vpdpbusd of a vector against 4 broadcast activation bytes advances 16 rows' dot
// products, and a block streams from memory in one pass.
//
// The arithmetic of a quantized Linear: each activation row is quantized to int8 in blocks of the
// weight's group size (scale absmax/127), so a group's dot product is an exact integer sum and the
// rest is two fused multiply-adds per group (ref::matmul_quant).
//
// MXFP4 (OCP microscaling, gpt-oss's expert weights) is held in the 4-bit packed layout with
// groups of 32 and WeightView::codes = kMxfp4: each nibble is an e2m1 index c, which the
// arithmetic reads as the unsigned code q = kMxfp4AffineCodes[c] = 2·e2m1[c] + 12 with the
// group's scale s = 2^(e − 128) and bias b = −12·s (bf16, exact), so s·q + b = e2m1[c]·2^(e − 127)
// exactly. Every kernel is the affine one with one byte shuffle (c -> q) after the nibble split.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace recur::kernels {

// Internal linkage: the ISA objects must not share an inline symbol (std::min binds a reference).
constexpr std::int64_t kQuantBlockRows = WeightView::kQuantBlockRows;

// The formats recur computes with: 4 or 8 bits, groups of 32, 64 or 128.
bool quant_format_supported(int bits, int group_size);

// A matrix in MLX's layout: codes [rows, cols·bits/32], scales and biases [rows, cols/group_size].
struct MlxQuantized {
  const std::uint32_t* codes = nullptr;
  const void* scales = nullptr;
  const void* biases = nullptr;
  DType dtype = DType::kF32;  // the scales' and biases'
  std::int64_t rows = 0, cols = 0;
  int bits = 0, group_size = 0;
};

// Element j of an MLX-layout row of packed words.
inline std::uint32_t quant_code(const std::uint32_t* row, int bits, std::int64_t j) {
  const std::int64_t bit = j * bits;
  return (row[bit / 32] >> (bit % 32)) & ((1u << bits) - 1u);
}

// Quantizes `rows` rows of `cols` f32 weights the way MLX's CPU backend does (per group: the
// scale spans min..max and is nudged so that the edge of larger magnitude is exactly a code;
// q = clamp(rint((w − b) / s))) into MLX's layout: codes [rows, cols·bits/32], and scales and
// biases [rows, cols/group_size] as `scale_dtype` (rounded to nearest even). cols % group_size ==
// 0.
void quantize_rows(const float* w, std::int64_t rows, std::int64_t cols, int bits, int group_size,
                   DType scale_dtype, std::uint32_t* codes, void* scales, void* biases);

// Row r of an MLX-layout matrix as f32 (s·q + b, in f32), cols values.
void dequantize_row(const MlxQuantized& m, std::int64_t r, float* out);

// The packed view of a matrix of m's format over `data` (m.codes/scales/biases unused), which
// holds packed_view(m, data).total_bytes() bytes.
WeightView packed_view(const MlxQuantized& m, const void* data);

// Packs rows [r0, r0 + n) of m into the packed matrix `out` (r0 a multiple of kQuantBlockRows;
// rows of the last block past m.rows are written as zeros, with zero scales and biases). m's
// pointers may address just those rows: row r0 of the matrix is row 0 of m's arrays.
void pack_quantized_rows(const MlxQuantized& m, std::int64_t r0, std::int64_t n,
                         const WeightView& out);

// MXFP4 as released (OCP MX, gpt-oss's *_blocks / *_scales): per row, inputs in blocks of 32, each
// block 16 bytes (byte j: element 2j in its low nibble, 2j + 1 in its high one, as transformers'
// convert_moe_packed_tensors reads them) of e2m1 indices into kE2m1Values, and one e8m0 scale
// byte e: element = e2m1[c]·2^(e − 127); e = 255 is NaN.
struct Mxfp4Matrix {
  const std::uint8_t* blocks = nullptr;  // [rows, cols / 32, 16]
  const std::uint8_t* scales = nullptr;  // [rows, cols / 32], e8m0
  std::int64_t rows = 0, cols = 0;       // cols % 32 == 0
};

// The e2m1 values of the 16 codes (sign bit 3, then 2 exponent bits and 1 mantissa bit).
constexpr float kE2m1Values[16] = {+0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                   -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// The unsigned affine code each e2m1 index stands for in a kMxfp4 view: 2·e2m1[c] + 12, so that
// with s = 2^(e − 128) and b = −12·s, s·q + b = e2m1[c]·2^(e − 127). Unsigned because the integer
// dot products take the weight operand as u8 (vpdpbusd, vpmaddubsw, tdpbsud).
constexpr std::uint8_t kMxfp4AffineCodes[16] = {12, 13, 14, 15, 16, 18, 20, 24,
                                                12, 11, 10, 9,  8,  6,  4,  0};

// e2m1[code] · 2^(scale − 127), exact (scale 255: NaN).
float mxfp4_value(std::uint8_t code, std::uint8_t scale);

// The packed view (bits 4, group 32, bf16 scales/biases, codes kMxfp4) over `data`, which holds
// view.total_bytes() bytes.
WeightView mxfp4_packed_view(std::int64_t rows, std::int64_t cols, const void* data);

// Packs rows [r0, r0 + n) of m into `out` (as pack_quantized_rows: r0 a multiple of
// kQuantBlockRows, rows past m.rows zero, m's pointers may address just those rows). Returns
// false, writing nothing, when a scale byte of those rows is 255 (NaN), so the loader can name the
// tensor. Scales 253 and 254 are packed (dequantize_row stays exact there), but their bias −12·s
// overflows bf16 to −inf, so a matmul over such a group gives inf or NaN: weights of 2^125 and
// more, whose products overflow f32 anyway (trained weights' scales sit near 127).
bool pack_mxfp4_rows(const Mxfp4Matrix& m, std::int64_t r0, std::int64_t n, const WeightView& out);

// One element of a packed view: row r's code of input e (the unsigned q of the arithmetic: a
// kMxfp4 view's e2m1 index read through kMxfp4AffineCodes), and its group g's scale and bias.
std::uint32_t packed_code(const WeightView& w, std::int64_t r, std::int64_t e);
float packed_scale(const WeightView& w, std::int64_t r, std::int64_t g);
float packed_bias(const WeightView& w, std::int64_t r, std::int64_t g);

// Row r of a packed view as f32 (s·q + b, in f32), cols values: the same floats as the MLX row.
// A kMxfp4 view gives s·(q − 12), which is s·q + b wherever that does not overflow, and is
// e2m1[c]·2^(e − 127) exactly (−0 as +0).
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

// n_rows activation rows quantized together: q [n_rows, cols], then d and xsum
// [n_rows, cols / group_size] each. The quantized matmul path's prepared activations.
std::int64_t quantized_rows_bytes(std::int64_t n_rows, std::int64_t cols, int group_size);
QuantizedActivations quantized_rows_view(void* base, std::int64_t n_rows, std::int64_t cols,
                                         int group_size);

namespace ref {
// y[r, n] for the rows n of w (packed, a slice starting on a block) and activation rows already
// quantized (row r's blocks at a.q + r·cols, a.d + r·groups, a.xsum + r·groups):
//   acc = fma(s_g·d_g, dot_g, acc) and bias = fma(b_g, xsum_g, bias) over g in order, from 0,
//   where dot_g = Σ_{i∈g} q_w[i]·q_x[i] (an exact integer; q_w is packed_code's, so a kMxfp4
//   view's e2m1 indices enter through kMxfp4AffineCodes), then y = acc + bias.
void matmul_quant(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w, float* y,
                  std::int64_t ldy);
}  // namespace ref

}  // namespace recur::kernels
