// The compute-peak probes (bench.cc's ceilings): every "of the peak" figure divides by them, so a
// probe slowed by its own code generation inflates them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "kernels/isa.h"
#include "kernels/peak_loops.h"

namespace recur::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// Best instructions per second of `loop` (ops_per_instruction of the count it returns) over
// short runs, so an interruption by the host lands on one run, not on the figure.
double instructions_per_s(double (*loop)(std::int64_t), double ops_per_instruction,
                          std::int64_t iters) {
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = Clock::now();
    const double ops = loop(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, ops / ops_per_instruction / s);
  }
  return best;
}

// vpdpbusd and vdpbf16ps issue at the same rate on Zen 4 and Zen 5 (2 per cycle) and vpdpbusd
// faster on Sapphire Rapids, so the int8 loop cannot run at well under the bf16 loop's rate
// unless its accumulators leave the registers: GCC 12 spilled the intrinsic form to the stack,
// 0.37 of the bf16 loop's rate on the Zen 5 VM (its int8 peak read 753 GOP/s instead of 1838).
TEST(PeakProbe, Int8LoopIssuesAsFastAsTheBf16Loop) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 BF16 / VNNI on this CPU";
  constexpr std::int64_t kIters = 1 << 16;  // 1.5 M instructions: ~0.4 ms on Zen 5
  double int8 = 0, bf16 = 0;
  for (int round = 0; round < 3; ++round) {  // alternating, so a slow period hits both
    int8 = std::max(int8, instructions_per_s(detail::peak_loop_avx512_int8, 16 * 4 * 2, kIters));
    bf16 = std::max(bf16, instructions_per_s(detail::peak_loop_avx512_bf16, 16 * 2 * 2, kIters));
  }
  EXPECT_GT(int8, 0.6 * bf16) << "vpdpbusd " << int8 / 1e9 << " G/s, vdpbf16ps " << bf16 / 1e9
                              << " G/s";
}

// The AVX-VNNI probe runs from registers: vpdpbusd forms 64 byte products in one instruction where
// the AVX2 sequence (also a probe) needs five for them, so its rate in operations is the higher one
// unless its loop spills, as the intrinsic form of the AVX-512 loop did.
TEST(PeakProbe, AvxVnniLoopOutrunsTheAvx2Sequence) {
  if (!isa_supported(Isa::kAvx2Vnni)) GTEST_SKIP() << "no AVX-VNNI on this CPU";
  constexpr std::int64_t kIters = 1 << 16;
  double vnni = 0, seq = 0;
  for (int round = 0; round < 3; ++round) {  // alternating, so a slow period hits both
    vnni = std::max(vnni, instructions_per_s(detail::peak_loop_avxvnni_int8, 1, kIters));
    seq = std::max(seq, instructions_per_s(detail::peak_loop_avx2_int8, 1, kIters));
  }
  EXPECT_GT(vnni, seq) << "avx-vnni " << vnni / 1e9 << " GOP/s, avx2 sequence " << seq / 1e9
                       << " GOP/s";
}

}  // namespace
}  // namespace recur::kernels
