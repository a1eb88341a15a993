// The quantized matmul path's parts shared by every ISA: the activation rows quantized to int8
// (the same arithmetic everywhere, so every ISA's kernel reads the same integers), and the scalar
// ISA's block, which is the reference itself.
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"

namespace recur::kernels::detail {

std::int64_t quantized_x_bytes(const ActivationRows& a) {
  return quantized_rows_bytes(a.n_rows, a.k_dim, a.group_size);
}

void quantize_x_rows(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  const QuantizedActivations all = quantized_rows_view(out, a.n_rows, a.k_dim, a.group_size);
  const std::int64_t groups = a.k_dim / a.group_size;
  for (std::int64_t r = r0; r < r1; ++r) {
    quantize_activation_row(
        a.row(r), a.k_dim, a.group_size,
        {.q = all.q + r * a.k_dim, .d = all.d + r * groups, .xsum = all.xsum + r * groups});
  }
}

void matmul_block_quant_scalar(const MatmulOperands& op, const MatmulBlock& b) {
  const QuantizedActivations all =
      quantized_rows_view(const_cast<void*>(op.xp), op.n_rows, op.w.cols, op.w.group_size);
  const std::int64_t groups = op.w.groups();
  const QuantizedActivations rows{
      .q = all.q + b.m0 * op.w.cols, .d = all.d + b.m0 * groups, .xsum = all.xsum + b.m0 * groups};
  ref::matmul_quant(rows, b.m1 - b.m0, op.w.slice_rows(b.n0, b.n1 - b.n0),
                    op.y + b.m0 * op.w.rows + b.n0, op.w.rows);
}

}  // namespace recur::kernels::detail
