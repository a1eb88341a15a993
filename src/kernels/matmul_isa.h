// Internal to kernels/: what the matmul dispatcher (dispatch.cc) and the per-ISA matmul files
// share: the operands a block function reads, the block it computes, the activation rows a
// path prepares, the decode read order, and each ISA file's entry points, which are reached only
// through that ISA's KernelTable (kernel_table.h).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/matmul_grouped.h"
#include "util/thread_pool.h"

namespace recur::kernels::detail {

// Every group's y_i = x · W_iᵀ on the active ISA (kernels.h matmul_fused, matmul_grouped.h): one
// preparation of a group's activations per kind of weight, all in one parallel run, then one
// parallel run over the blocks of output columns (and row blocks for big batches) of all the
// groups' outputs.
void matmul_dispatch(ThreadPool& pool, std::span<const MatmulGroup> groups);

struct MatmulOperands {
  const float* x = nullptr;  // [n_rows, K] f32 as the caller gave it
  // x in the layout of the path's prepare_x (null when the path has none), one of:
  // avx512 tiles: bf16(x) [n_rows, K rounded up to 32], zero-padded (to_bf16_rows_avx512);
  // avx2 tiles: f32(bf16(x)) [n_rows, K] (round_rows_avx2);
  // amx: x packed as tdpbf16ps B tiles (amx_pack_x_block);
  // avx512 / avx2 lanes: x packed with rows as lanes (pack_x_lanes_avx512 / _avx2);
  // quantized weights: x quantized to int8 per weight group (quantize_x_rows).
  const void* xp = nullptr;
  WeightView w;
  float* y = nullptr;  // [n_rows, w.rows]
  std::int64_t n_rows = 0;
  // One of a grouped streaming call's parts (a decode step's experts): a thread's run of chunks
  // jumps from one small matrix to another (DecodeOrder::scattered_l1_prefetch).
  bool scattered = false;
  // Its tasks run in one range of consecutive column blocks per thread (dispatch.cc
  // run_parts_streaming): the next block of w is usually this thread's next task.
  bool ranged = false;
};

// Calls of at most this many activation rows (decode steps) stream their weights from memory:
// larger column blocks per task and software prefetch (matmul_avx512.cc).
inline constexpr std::int64_t kStreamRows = 8;
// ... and in grouped calls on the AVX-512 bf16 tiles up to this many (an MoE prefill's experts:
// matmul_avx512.cc run_block_next requests each task's next slice of weights while it computes
// the current one). Dense calls of 9-15 rows (a short follow-up turn) keep 64 x 64 blocks:
// qwen3-0.6b's turns of 10-15 tokens ran at 0.8-1.0x in 128-column tasks with the requests.
inline constexpr std::int64_t kSliceStreamRows = 23;
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
// scattered_l1_prefetch: the parts of a grouped streaming call (MatmulOperands::scattered, a
// decode step's experts: 1.5-3 MB matrices at unrelated addresses) read 4 weight rows interleaved
// with l1_prefetch whatever the order above. AMD (Zen 5 VM, qwen3-30b-a3b with 8 layers, eight
// alternating runs): one sequence 76-82% -> 80-85% of the paired bound, four 71-76% -> 74-77%
// (eight more: tokens/s 1.05x / 1.09x, ratios mixed as the probe wandered), while a dense
// model's calls stay faster in the vendor's order (qwen3.5-0.8b, one sequence: 73-78% against
// 67-71% interleaved with l1_prefetch).
struct DecodeOrder {
  bool one_row_sequential = false;
  bool rows_sequential = false;
  bool l1_prefetch = false;
  bool scattered_l1_prefetch = false;
  // The order a call's part reads in: scattered parts may read as above.
  DecodeOrder for_part(bool scattered) const {
    if (!scattered || !scattered_l1_prefetch) return *this;
    return {.one_row_sequential = false, .rows_sequential = false, .l1_prefetch = true};
  }
};
DecodeOrder decode_order();
// Tests: forces `order`; nullptr returns to the vendor's.
void override_decode_order(const DecodeOrder* order);
// An order as the benchmarks' --decode-order bits name it: 1 one_row_sequential, 2
// rows_sequential, 4 l1_prefetch, 8 scattered_l1_prefetch.
DecodeOrder decode_order_from_bits(int bits);

// Output rows [m0, m1) x columns [n0, n1).
struct MatmulBlock {
  std::int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
  // Under the ranged split: the first weight row of the task the thread runs next, usually (the
  // next block of w, or the first of the next part's weight), or null at the end of the call.
  const void* next = nullptr;
};
// Output blocks of calls past kStreamRows: multiples of the AMX tile grid (32) and of the tiles'
// micro-tiles. Tasks walk row blocks fastest so consecutive tasks share a block of W while it is
// hot in cache.
inline constexpr std::int64_t kMatmulBlockN = 64;
inline constexpr std::int64_t kMatmulBlockM = 64;

// The activations a path prepares, kPrepRows rows per call so the dispatcher can spread the
// preparation over the pool (it is a tenth of a large matmul's time; done by one thread it would
// cap the speed-up). Compiled with each ISA's flags so the conversion loops vectorise; every
// rounding is f32_to_bf16's.
struct ActivationRows {
  const float* x = nullptr;  // [n_rows, k_dim], or rows of k_dim picked by row_ids
  std::int64_t n_rows = 0;
  std::int64_t k_dim = 0;
  int group_size = 0;  // the weights' quantization group (WeightView::group_size), 0 if none
  // MatmulGroup::rows: row r is x's row row_ids[r]; null: x's row r. Only paths with
  // MatmulPath::indexed_rows are handed row ids (they read x through row()).
  const std::int32_t* row_ids = nullptr;
  const float* row(std::int64_t r) const {
    return x + (row_ids != nullptr ? static_cast<std::int64_t>(row_ids[r]) : r) * k_dim;
  }
};
inline constexpr std::int64_t kPrepRows = 16;  // the AMX tile rows and the lanes kernels' groups

// ---- the ISA files' entry points (each reached only through its KernelTable) ----------------
// The prepare functions fill rows [r0, r1) of their layout (r0 a multiple of kPrepRows,
// r1 = min(n_rows, r0 + kPrepRows)); the bytes functions size it for all of a's rows.

// matmul_avx512.cc: 4x4 tiles, bf16 via vdpbf16ps on bf16(x) [n_rows, K rounded up to 32]
// (zero-padded), f32 / f16 via FMA on x.
std::int64_t to_bf16_rows_bytes(const ActivationRows& a);
void to_bf16_rows_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_avx512(const MatmulOperands& op, const MatmulBlock& b);

// matmul_avx2.cc: bf16 weights widened to f32 against f32(bf16(x)) [n_rows, K].
std::int64_t round_rows_bytes(const ActivationRows& a);
void round_rows_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_avx2(const MatmulOperands& op, const MatmulBlock& b);

// matmul_amx.cc: x packed as tdpbf16ps B tiles (amx_kernel.h); bf16 weights only.
std::int64_t amx_x_bytes(const ActivationRows& a);
void amx_pack_x(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_amx(const MatmulOperands& op, const MatmulBlock& b);

// Calls of at least this many rows run the lanes kernels (bf16 weights): activations packed with
// 16 (avx512) or 8 (avx2) rows per vector, weights broadcast, the same bytes as the tiles.
inline constexpr std::int64_t kLanesRows = 16;
// ... when the call's bf16 weights have this many rows in all: packing the activations costs about
// as much as the product with a handful of columns (16 x 1024 at 512 rows: 70 GFLOP/s packed, 84
// with the tiles, on two Xeon threads), and both paths give the same bytes.
inline constexpr std::int64_t kLanesMinCols = 64;
// The lanes kernels' output columns per task: 16 of their 6-column micro-tiles.
inline constexpr std::int64_t kLanesBlockN = 96;

// The bytes of weight rows one AVX-512 lanes micro-tile may hold: its 16 lane passes each read
// them again, so they must stay in L1 beside the packed activations streaming through. 32 KiB
// where L1 is 48 KiB (Zen 5: qwen3-30b-a3b's expert gate+up stage, K 2048, takes 8 weight rows
// instead of 6, 1.04-1.05x in moe_bench), else 24 KiB (32 KiB L1 of Zen 4; the figure the 12- and
// 8-row tiles were first measured with).
std::int64_t lanes_weight_l1_bytes();

// matmul_lanes_avx512.cc: x rounded (as f32_to_bf16) and packed per 16-row group; rows past
// n_rows and K past k_dim are zeros. Blocks must start on a multiple of 64 rows (the micro-tile).
std::int64_t lanes_x_bytes_avx512(const ActivationRows& a);
void pack_x_lanes_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_lanes_avx512(const MatmulOperands& op, const MatmulBlock& b);

// matmul_lanes_avx2.cc: 8 rows per vector, f32(bf16(x)) packed per 16-row block. Blocks must
// start on a multiple of 16 rows.
std::int64_t lanes_x_bytes_avx2(const ActivationRows& a);
void pack_x_lanes_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_lanes_avx2(const MatmulOperands& op, const MatmulBlock& b);
// The AVX2 lanes kernel widens a task's weight rows to f32 once per task: where there are enough
// column blocks to keep every thread busy, tasks span up to this many rows, so a 512-row call
// widens each weight block twice instead of eight times (512 rows: 1.02-1.07x on the Xeon VM).
inline constexpr std::int64_t kLanesAvx2BlockM = 256;
// The calling thread's buffer of at least n floats (the widened weight rows of a task). Defined
// in dispatch.cc: an ISA file must not instantiate std::vector (its weak symbols could be picked
// for code on CPUs without the ISA; tests/kernels/check_isa_symbols.sh).
float* lanes_weight_scratch(std::int64_t n);

// matmul_quant.cc: quantized weights (quant.h's packed layout) against x quantized to int8 per
// weight group (quant.h quantized_rows_view: q, then d and xsum), the same integers on every ISA;
// the scalar block is ref::matmul_quant. Blocks start on a multiple of kQuantBlockRows columns.
std::int64_t quantized_x_bytes(const ActivationRows& a);
void quantize_x_rows(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_quant_scalar(const MatmulOperands& op, const MatmulBlock& b);
// matmul_quant_avx512.cc: vpdpbusd over 16 weight rows per vector; matmul_quant_avx2.cc: 8 rows
// per vector from 4-bit nibbles (vpmaddubsw). Both give the reference's bytes.
// Their quantize_x_rows are quantize_x_rows' bytes (the scalar one calls libm's nearbyint per
// input: it cost more than the 4-row matmul itself).
void quantize_x_rows_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
// One group of n inputs (a multiple of 16) quantized as quantize_activation_row does, input i's
// code stored at q[i / chunk · chunk_stride + i % chunk] (chunk a multiple of 16).
void quantize_group_avx512(const float* x, int n, int chunk, std::int64_t chunk_stride,
                           std::int8_t* q, float* d, float* xsum);
void matmul_block_quant_avx512(const MatmulOperands& op, const MatmulBlock& b);
void quantize_x_rows_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_quant_avx2(const MatmulOperands& op, const MatmulBlock& b);
void matmul_block_quant_avxvnni(const MatmulOperands& op, const MatmulBlock& b);
// matmul_quant_amx.cc: tdpbsud tiles over the same packed weights and the same int8 activations
// in tile order (amx_quant_kernel.h), the reference's bytes again. Calls of at most
// kAmxQuantMinRows rows run matmul_block_quant_avx512 on quant.h's layout.
inline constexpr std::int64_t kAmxQuantMinRows = kStreamRows;
std::int64_t amx_quant_x_bytes(const ActivationRows& a);
void amx_quantize_x_rows(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out);
void matmul_block_quant_amx(const MatmulOperands& op, const MatmulBlock& b);

}  // namespace recur::kernels::detail
