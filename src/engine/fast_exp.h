// The sampler's exponentials: exp(x) for x <= 0 in float with plain multiplies and adds only (no
// fused multiply-add, no libm call), so every machine computes the same bits, four lanes at a time
// (GCC/clang vector extensions, SSE2 on every x86-64) in exactly the operations of the scalar
// form. On a 248k vocabulary the exponentials were most of a draw.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace recur::engine {

// Range reduction by ln 2 in two parts, then the degree-6 Taylor polynomial on |r| <= ln2/2
// (relative error about 2e-7, far below what a probability needs); 0 below -87.
inline float exp_nonpositive(float x) {
  const float clamped = std::max(x, -87.0f);
  const float t = clamped * 1.44269504f;
  const auto k = static_cast<std::int32_t>(t - 0.5f);  // round to nearest for t <= 0
  const auto kf = static_cast<float>(k);
  const float r = (clamped - kf * 0.693145752f) - kf * 1.42860677e-6f;
  float p = r * (1.0f / 720.0f) + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
  // Below the clamp the result is 0: a multiply by 0 or 1 rather than a branch, so it vectorizes.
  return p * scale * static_cast<float>(x >= -87.0f);
}

// out[i] = exp_nonpositive(x[i] - shift), four lanes at a time.
inline void exp_shifted(const float* x, float shift, float* out, std::size_t n) {
  using F4 = float __attribute__((vector_size(16)));
  using I4 = std::int32_t __attribute__((vector_size(16)));
  using U4 = std::uint32_t __attribute__((vector_size(16)));
  const F4 lo = {-87.0f, -87.0f, -87.0f, -87.0f};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    F4 v;
    std::memcpy(&v, x + i, sizeof v);
    v = v - shift;
    const F4 clamped = v < lo ? lo : v;
    const F4 t = clamped * 1.44269504f;
    const I4 k = __builtin_convertvector(t - 0.5f, I4);
    const F4 kf = __builtin_convertvector(k, F4);
    const F4 r = (clamped - kf * 0.693145752f) - kf * 1.42860677e-6f;
    F4 p = r * (1.0f / 720.0f) + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    F4 scale;
    const U4 bits = __builtin_convertvector(k + 127, U4) << 23;
    std::memcpy(&scale, &bits, sizeof scale);
    const F4 keep = v >= lo ? F4{1.0f, 1.0f, 1.0f, 1.0f} : F4{0.0f, 0.0f, 0.0f, 0.0f};
    const F4 e = p * scale * keep;
    std::memcpy(out + i, &e, sizeof e);
  }
  for (; i < n; ++i) out[i] = exp_nonpositive(x[i] - shift);
}

}  // namespace recur::engine
