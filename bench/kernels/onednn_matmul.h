// oneDNN bf16 matmul timing on the same shapes and weight layout as ours (W [N, K] row-major,
// used in place as a "ba" [K, N] operand), as an external yardstick.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/bench.h"

namespace recur::bench {

struct OnednnTiming {
  kernels::MatmulTiming timing;
  std::string impl;  // the implementation oneDNN picked, e.g. "brg:avx512_core_bf16"
};

OnednnTiming time_onednn_matmul_bf16(const kernels::MatmulShape& shape, std::int64_t n_rows,
                                     double seconds);

}  // namespace recur::bench
