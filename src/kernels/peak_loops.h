// Internal to kernels/: register-only compute loops for the peak probe (bench.cc), one per ISA
// file. Each returns the FLOPs it executed.
#pragma once

#include <cstdint>

namespace recur::kernels::detail {

double peak_loop_avx512_bf16(std::int64_t iterations);
double peak_loop_amx_bf16(std::int64_t iterations);

}  // namespace recur::kernels::detail
