// The AVX2 and AVX2-VNNI ISAs' KernelTables (compiled with the AVX2 + FMA + F16C flags,
// CMakeLists.txt; only selected when isa.cc detected them): the vector kernels of vec_*.h compiled
// here, this file's own copies, and the AVX2 matmul files.
#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"
#include "kernels/vec_attention.h"
#include "kernels/vec_ops.h"
#include "kernels/vec_recurrence.h"
#include "kernels/vec_sample.h"

namespace recur::kernels::detail {
namespace {

constexpr KernelTable avx2_table() {
  return {
      .isa = Isa::kAvx2,
      .matmul_f32 = {.block = matmul_block_avx2},
      .matmul_f16 = {.block = matmul_block_avx2},
      .matmul_bf16 = {.x_bytes = round_rows_bytes,
                      .prepare_x = round_rows_avx2,
                      .block = matmul_block_avx2,
                      .indexed_rows = true},
      .matmul_bf16_lanes = {.x_bytes = lanes_x_bytes_avx2,
                            .prepare_x = pack_x_lanes_avx2,
                            .block = matmul_block_lanes_avx2,
                            .block_n = kLanesBlockN,
                            .wide_block_m = kLanesAvx2BlockM},
      .matmul_quant = {.x_bytes = quantized_x_bytes,
                       .prepare_x = quantize_x_rows_avx2,
                       .block = matmul_block_quant_avx2,
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

// AVX2 with the quantized matmul's integer dots on AVX-VNNI (matmul_quant_avxvnni.cc); the
// activations are quantized as on AVX2.
constexpr KernelTable avx2_vnni_table() {
  KernelTable t = avx2_table();
  t.isa = Isa::kAvx2Vnni;
  t.matmul_quant.block = matmul_block_quant_avxvnni;
  return t;
}

}  // namespace

constinit const KernelTable kAvx2Kernels = avx2_table();
constinit const KernelTable kAvx2VnniKernels = avx2_vnni_table();

}  // namespace recur::kernels::detail
