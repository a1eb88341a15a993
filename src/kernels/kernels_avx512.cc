// The AVX-512 and AMX ISAs' KernelTables (compiled with the AVX-512 F/BW/VL/DQ/BF16 flags,
// CMakeLists.txt; only selected when isa.cc detected them): the vector kernels of vec_*.h
// compiled here, this file's own copies, and the AVX-512 matmul files. AMX is AVX-512 with bf16
// matmul on the tiles (matmul_amx.cc), for every call size, so small and large batches round alike.
#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"
#include "kernels/vec_attention.h"
#include "kernels/vec_ops.h"
#include "kernels/vec_recurrence.h"
#include "kernels/vec_sample.h"

namespace recur::kernels::detail {
namespace {

constexpr KernelTable avx512_table() {
  return {
      .isa = Isa::kAvx512,
      .matmul_f32 = {.block = matmul_block_avx512},
      .matmul_f16 = {.block = matmul_block_avx512},
      .matmul_bf16 = {.x_bytes = to_bf16_rows_bytes,
                      .prepare_x = to_bf16_rows_avx512,
                      .block = matmul_block_avx512,
                      .stream_rows = kSliceStreamRows,
                      .indexed_rows = true},
      .matmul_bf16_lanes = {.x_bytes = lanes_x_bytes_avx512,
                            .prepare_x = pack_x_lanes_avx512,
                            .block = matmul_block_lanes_avx512,
                            .block_n = kLanesBlockN},
      .matmul_quant = {.x_bytes = quantized_x_bytes,
                       .prepare_x = quantize_x_rows_avx512,
                       .block = matmul_block_quant_avx512,
                       .indexed_rows = true,
                       .rowwise_quantized = true},
      .attention_query = vec::attention_query,
      .attention_tile = vec::attention_tile,
      .gated_delta_head = vec::gated_delta_head,
      .gated_delta_cols = vec::gated_delta_cols,
      .mamba2_head = vec::mamba2_head,
      .rms_norm = vec::rms_norm,
      .rms_norm_gated = vec::rms_norm_gated,
      .rms_norm_gate_first = vec::rms_norm_gate_first,
      .l2_norm = vec::l2_norm,
      .silu = vec::silu,
      .sigmoid = vec::sigmoid,
      .swiglu = vec::swiglu,
      .geglu = vec::geglu,
      .mul_sigmoid = vec::mul_sigmoid,
      .add = vec::add,
      .add_scaled = vec::add_scaled,
      .causal_conv1d = vec::causal_conv1d,
      .sample_max = vec::sample_max,
      .sample_block_sums = vec::sample_block_sums,
  };
}

constexpr KernelTable amx_table() {
  KernelTable t = avx512_table();
  t.isa = Isa::kAmx;
  t.matmul_bf16 = {.x_bytes = amx_x_bytes, .prepare_x = amx_pack_x, .block = matmul_block_amx};
  t.matmul_bf16_lanes = {};
  t.matmul_quant = {.x_bytes = amx_quant_x_bytes,
                    .prepare_x = amx_quantize_x_rows,
                    .block = matmul_block_quant_amx,
                    .indexed_rows = true};
  return t;
}

}  // namespace

constinit const KernelTable kAvx512Kernels = avx512_table();
constinit const KernelTable kAmxKernels = amx_table();

}  // namespace recur::kernels::detail
