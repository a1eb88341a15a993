// Internal to kernels/: the operands every per-ISA matmul block function reads, prepared once per
// call by the dispatcher (activation conversion), and the block of output it computes.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace recur::kernels::detail {

struct MatmulOperands {
  const float* x = nullptr;                // [n_rows, K] f32 as the caller gave it
  const std::uint16_t* x_bf16 = nullptr;   // avx512: bf16(x) [n_rows, ld_bf16], zero-padded
  std::int64_t ld_bf16 = 0;                // K rounded up to 32
  const float* x_rounded = nullptr;        // avx2: f32(bf16(x)) [n_rows, K]
  const std::uint16_t* x_vnni = nullptr;   // amx: x packed as tdpbf16ps B tiles (matmul_amx.cc)
  const std::uint16_t* x_lanes = nullptr;  // avx512, large calls: x packed with rows as lanes
  const float* x_lanes_f32 = nullptr;      // avx2, large calls: f32(bf16(x)) packed the same way
  WeightView w;
  float* y = nullptr;  // [n_rows, w.rows]
  std::int64_t n_rows = 0;
};

// Calls of at most this many activation rows (decode steps) stream their weights from memory:
// larger column blocks per task and software prefetch (matmul_avx512.cc).
inline constexpr std::int64_t kStreamRows = 8;
// How decode-sized calls (1-8 rows) order and prefetch their weight reads on avx512
// (matmul_avx512.cc). Every choice gives the same bytes; speed depends on the CPU's prefetchers,
// so cpuid's vendor decides, once. AMD: one row reads its weight rows one after another with no
// software prefetch (a single stream for the hardware prefetcher: 0.96 of the read probe on the
// Zen 4 VM, against 0.89 interleaved), 2-8 rows read 4 weight rows interleaved, prefetching 64
// rows ahead into L2. Intel (Xeon VM): one row reads 4 rows interleaved, 2-8 rows read the weight
// rows one after another (4-sequence decode 1.02-1.2x), both with l1_prefetch: each line is
// requested twice ahead of its use, into L2 32 KiB ahead and into L1 about 4 KiB ahead (the
// Xeon's hardware prefetchers alone read 0.45 of the probe at 4 rows; L2-only prefetch 0.6-0.8
// depending on the call's size, L2 + L1 0.8-0.9).
struct DecodeOrder {
  bool one_row_sequential = false;
  bool rows_sequential = false;
  bool l1_prefetch = false;
};
DecodeOrder decode_order();
// Tests: forces `order`; nullptr returns to the vendor's.
void override_decode_order(const DecodeOrder* order);

// Output rows [m0, m1) x columns [n0, n1).
struct MatmulBlock {
  std::int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
};

void matmul_block_avx512(const MatmulOperands& op, const MatmulBlock& b);
void matmul_block_avx2(const MatmulOperands& op, const MatmulBlock& b);

// AMX: x_vnni layout and block granularity are described in matmul_amx.cc.
// Activation preparation, one block of rows per call so the dispatcher can spread it over the
// pool; compiled with each ISA's flags so the conversion loops vectorise (same rounding as
// f32_to_bf16 everywhere).
struct ActivationRows {
  const float* x = nullptr;  // [n_rows, k_dim]
  std::int64_t n_rows = 0;
  std::int64_t k_dim = 0;
};
// bf16(x) rows [r0, r1) into out [n_rows, ld], zero-padded from k_dim to ld.
void to_bf16_rows_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, std::int64_t ld,
                         std::uint16_t* out);
// f32(bf16(x)) rows [r0, r1) into out [n_rows, k_dim].
void round_rows_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, float* out);
std::int64_t amx_vnni_elements(std::int64_t n_rows, std::int64_t k_dim);
// The 16-row block mb of the AMX packed layout.
void amx_pack_x_block(const ActivationRows& a, std::int64_t mb, std::uint16_t* out);
void matmul_block_amx(const MatmulOperands& op, const MatmulBlock& b);

// Calls of at least this many rows on avx512 run matmul_lanes_avx512.cc's kernel (bf16 weights):
// activations packed with 16 rows per vector, weight pairs broadcast, the same bytes as the tiles.
inline constexpr std::int64_t kLanesRows = 16;
// ... when the call's bf16 weights have this many rows in all: packing the activations costs about
// as much as the product with a handful of columns (16 x 1024 at 512 rows: 70 GFLOP/s packed, 84
// with the tiles, on two Xeon threads), and both paths give the same bytes.
inline constexpr std::int64_t kLanesMinCols = 64;
// Size (uint16) of the packed activations, and the packing of 16-row group mg straight from the
// f32 rows (rounded as f32_to_bf16); rows past n_rows and K past k_dim are zeros.
std::int64_t lanes_x_elements(std::int64_t n_rows, std::int64_t k_dim);
void pack_x_lanes_avx512(const ActivationRows& a, std::int64_t mg, std::uint16_t* xp);
// Blocks must start on a multiple of 64 rows (the micro-tile).
void matmul_block_lanes_avx512(const MatmulOperands& op, const MatmulBlock& b);
// The AVX2 form (matmul_lanes_avx2.cc): 8 rows per vector, packed per 16-row block `block`.
std::int64_t lanes_x_elements_avx2(std::int64_t n_rows, std::int64_t k_dim);
void pack_x_lanes_avx2(const ActivationRows& a, std::int64_t block, float* xp);
// Blocks must start on a multiple of 16 rows.
void matmul_block_lanes_avx2(const MatmulOperands& op, const MatmulBlock& b);
// The calling thread's buffer of at least n floats (the widened weight rows of a task). Defined
// in dispatch.cc: an ISA file must not instantiate std::vector (its weak symbols could be picked
// for code on CPUs without the ISA; tests/kernels/check_isa_symbols.sh).
float* lanes_weight_scratch(std::int64_t n);

}  // namespace recur::kernels::detail
