// Internal to kernels/: register-only compute loops for the peak probe (bench.cc), one per ISA
// file. Each returns the FLOPs (int8: operations) it executed.
#pragma once

#include <cstdint>

namespace recur::kernels::detail {

double peak_loop_avx2_f32(std::int64_t iterations);
double peak_loop_avx512_bf16(std::int64_t iterations);
double peak_loop_amx_bf16(std::int64_t iterations);
// The int8 loops count a multiply and an add per byte product, as the bf16 ones count FLOPs.
double peak_loop_avx2_int8(std::int64_t iterations);     // matmul_quant_avx2.cc's 4-bit step
double peak_loop_avxvnni_int8(std::int64_t iterations);  // 256-bit vpdpbusd
double peak_loop_avx512_int8(std::int64_t iterations);
double peak_loop_amx_int8(std::int64_t iterations);

}  // namespace recur::kernels::detail
