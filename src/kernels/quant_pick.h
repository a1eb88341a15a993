// Internal to kernels/: the instantiation of a quantized-matmul block kernel for one weight's
// bits, group size, scale dtype and code kind (MXFP4: 4 bits, groups of 32, bf16 only). Each ISA's
// quantized-matmul file includes it with its own flags; everything here has internal linkage, so no
// weak symbol crosses ISAs (tests/kernels/check_isa_symbols.sh).
#pragma once

#include "kernels/matmul_isa.h"
#include "util/check.h"

namespace recur::kernels::detail {
namespace {

using QuantBlockFn = void (*)(const MatmulOperands& op, const MatmulBlock& b);

// Kernel::block<kBits, kGroup, kDType, kCodes> is the block function of one format.
template <typename Kernel, int kBits, int kGroup>
QuantBlockFn pick_quant_dtype(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return Kernel::template block<kBits, kGroup, DType::kBF16, QuantCodes::kAffine>;
    case DType::kF16:
      return Kernel::template block<kBits, kGroup, DType::kF16, QuantCodes::kAffine>;
    case DType::kF32:
      break;
  }
  return Kernel::template block<kBits, kGroup, DType::kF32, QuantCodes::kAffine>;
}

template <typename Kernel, int kBits>
QuantBlockFn pick_quant_group(int group_size, DType dtype) {
  switch (group_size) {
    case 32:
      return pick_quant_dtype<Kernel, kBits, 32>(dtype);
    case 64:
      return pick_quant_dtype<Kernel, kBits, 64>(dtype);
    default:
      return pick_quant_dtype<Kernel, kBits, 128>(dtype);
  }
}

template <typename Kernel>
void run_quant_block(const MatmulOperands& op, const MatmulBlock& b) {
  if (op.w.codes == QuantCodes::kMxfp4) {
    RECUR_CHECK(op.w.bits == 4 && op.w.group_size == 32 && op.w.dtype == DType::kBF16);
    Kernel::template block<4, 32, DType::kBF16, QuantCodes::kMxfp4>(op, b);
    return;
  }
  const QuantBlockFn fn = op.w.bits == 4 ? pick_quant_group<Kernel, 4>(op.w.group_size, op.w.dtype)
                                         : pick_quant_group<Kernel, 8>(op.w.group_size, op.w.dtype);
  fn(op, b);
}

}  // namespace
}  // namespace recur::kernels::detail
