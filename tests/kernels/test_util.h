// Shared helpers for the kernel tests: random data, weights in each dtype, and the ISAs this
// machine can run (every test loops over them and compares with the scalar reference).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/isa.h"
#include "kernels/matmul_isa.h"

namespace recur::kernels::testing {

inline std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

// The ISAs with their own vector code (AMX runs AVX-512's outside matmul): a comparison across
// ISAs means something only when this returns two.
inline std::vector<Isa> vector_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}
inline constexpr const char* kNeedsTwoVectorIsas =
    "the comparison across vector ISAs needs both AVX2 and AVX-512; this CPU has fewer";

// Selects `isa` for the scope and restores the previous one.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) : saved_(active_isa()) { EXPECT_TRUE(select_isa(isa).is_ok()); }
  ~ScopedIsa() { (void)select_isa(saved_); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa saved_;
};

// Forces a decode read order (matmul_isa.h, the benchmarks' --decode-order bits) for a scope: the
// vendor's returns even when an assertion leaves the scope early.
class ScopedDecodeOrder {
 public:
  explicit ScopedDecodeOrder(int bits) {
    const detail::DecodeOrder order = detail::decode_order_from_bits(bits);
    detail::override_decode_order(&order);
  }
  ~ScopedDecodeOrder() { detail::override_decode_order(nullptr); }
  ScopedDecodeOrder(const ScopedDecodeOrder&) = delete;
  ScopedDecodeOrder& operator=(const ScopedDecodeOrder&) = delete;
};

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A weight matrix in `dtype` with `pad` leading elements so data can be misaligned on purpose.
struct OwnedWeight {
  std::vector<std::uint8_t> bytes;
  WeightView view;
};

inline OwnedWeight make_weight(DType dtype, std::int64_t rows, std::int64_t cols,
                               std::uint32_t seed, std::int64_t pad = 0) {
  OwnedWeight w;
  const std::int64_t eb = dtype_bytes(dtype);
  w.bytes.resize(static_cast<std::size_t>((rows * cols + pad) * eb + 1));
  const auto vals = random_floats(static_cast<std::size_t>(rows * cols), seed);
  std::uint8_t* base = w.bytes.data() + pad * eb;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float f = vals[static_cast<std::size_t>(i)];
    if (dtype == DType::kF32) {
      std::memcpy(base + i * 4, &f, 4);
    } else {
      const std::uint16_t h = dtype == DType::kBF16 ? f32_to_bf16(f) : f32_to_f16(f);
      std::memcpy(base + i * 2, &h, 2);
    }
  }
  w.view = {base, dtype, rows, cols};
  return w;
}

inline bool same_bytes(const float* a, const float* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}

}  // namespace recur::kernels::testing
