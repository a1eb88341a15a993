// The scalar ISA's KernelTable: the reference (reference.h) for every kernel, so `--isa scalar`
// runs the oracle itself (and valgrind can run everything).
#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"
#include "kernels/reference.h"

namespace recur::kernels::detail {
namespace {

// ref::matmul on one block: each output element is its own sequential sum, so any split gives
// the reference's bytes.
void matmul_block_scalar(const MatmulOperands& op, const MatmulBlock& b) {
  ref::matmul(op.x + b.m0 * op.w.cols, b.m1 - b.m0, op.w.slice_rows(b.n0, b.n1 - b.n0),
              op.y + b.m0 * op.w.rows + b.n0, op.w.rows);
}

}  // namespace

constinit const KernelTable kScalarKernels{
    .isa = Isa::kScalar,
    .matmul_f32 = {.block = matmul_block_scalar},
    .matmul_f16 = {.block = matmul_block_scalar},
    .matmul_bf16 = {.block = matmul_block_scalar},
    .matmul_quant = {.x_bytes = quantized_x_bytes,
                     .prepare_x = quantize_x_rows,
                     .block = matmul_block_quant_scalar,
                     .indexed_rows = true,
                     .rowwise_quantized = true},
    .attention_query = ref::attention_query,
    .gated_delta_head = ref::gated_delta_head,
    .mamba2_head = ref::mamba2_head,
    .rms_norm = ref::rms_norm,
    .rms_norm_gated = ref::rms_norm_gated,
    .rms_norm_gate_first = ref::rms_norm_gate_first,
    .l2_norm = ref::l2_norm,
    .silu = ref::silu,
    .sigmoid = ref::sigmoid,
    .swiglu = ref::swiglu,
    .geglu = ref::geglu,
    .mul_sigmoid = ref::mul_sigmoid,
    .add = ref::add,
    .add_scaled = ref::add_scaled,
    .causal_conv1d = ref::causal_conv1d,
    .sample_max = ref::sample_max,
    .sample_block_sums = ref::sample_block_sums,
};

}  // namespace recur::kernels::detail
