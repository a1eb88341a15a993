// Which instruction set the kernels run on: detected once (cpuid + xgetbv), forced with
// RECUR_ISA / --isa for testing and valgrind. Every kernel dispatches on active_isa(); code for an
// ISA the CPU lacks is never executed.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/status.h"

namespace recur::kernels {

// Ordered from slowest to fastest; kAuto means "the best this CPU has". kAvx2Vnni is AVX2 whose
// quantized matmul runs on AVX-VNNI's 256-bit vpdpbusd (Intel client CPUs since Alder Lake).
enum class Isa : std::uint8_t { kScalar, kAvx2, kAvx2Vnni, kAvx512, kAmx, kAuto };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avx2-vnni", "avx512", "amx", "auto"
// Parses a name as written by isa_name (the --isa / RECUR_ISA choices).
Result<Isa> parse_isa(std::string_view name);

// What this CPU and OS support: avx2 = AVX2+FMA+F16C; avx2-vnni = that and AVX-VNNI; avx512 =
// AVX-512 F/BW/VL/BF16 with the OS saving zmm state; amx = AMX-TILE+AMX-BF16 with tile state
// granted by the kernel.
bool isa_supported(Isa isa);
Isa best_isa();

// Makes `requested` (kAuto: best_isa()) the ISA every kernel uses from now on, and returns it.
// Fails with kFailedPrecondition naming the missing feature when the CPU lacks it. Called once
// at startup; tests call it between cases. Not thread-safe against running kernels.
Result<Isa> select_isa(Isa requested);
Isa active_isa();

}  // namespace recur::kernels
