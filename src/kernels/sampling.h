// The arithmetic of a token draw (engine/sampler.cc) over a whole vocabulary row: the largest
// allowed logit, then each token's weight exp(logit·scale − shift) summed in blocks of 64 ids. On
// a 248k vocabulary these passes are most of a draw, so they are vector kernels; every ISA gives
// the scalar form's bits (sample_weight below is the definition), so a seed draws the same token
// on every machine.
#pragma once

#include <bit>
#include <cstdint>

namespace recur::kernels {

// Ids per block of sample_block_sums: one word of an allowed-token mask.
inline constexpr std::int64_t kSampleBlock = 64;

// exp(x) for x <= 0 in float with plain multiplies and adds only (no fused multiply-add, no libm
// call): range reduction by ln 2 in two parts, then the degree-6 Taylor polynomial on
// |r| <= ln2/2 (relative error about 2e-7, far below what a probability needs); 0 below -87.
inline float sample_exp(float x) {
  const float clamped = x < -87.0f ? -87.0f : x;
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
  return x >= -87.0f ? p * scale : 0.0f;
}

// One row of a draw. A token's weight is sample_exp(logit · scale − shift), both roundings kept
// (no contraction), or 0 when the token is not allowed or its weight is below `floor` (min-p).
struct SampleRow {
  const float* logits = nullptr;
  std::int64_t n = 0;
  float scale = 1.0f;                      // 1 / temperature
  float shift = 0.0f;                      // the largest allowed logit, times scale
  const std::uint64_t* allowed = nullptr;  // one bit per id, ceil(n / 64) words; null: every id
  float floor = 0.0f;
};

inline bool sample_allowed(const SampleRow& r, std::int64_t i) {
  return r.allowed == nullptr || ((r.allowed[i >> 6] >> (i & 63)) & 1) != 0;
}

inline float sample_weight(const SampleRow& r, std::int64_t i) {
  if (!sample_allowed(r, i)) return 0.0f;
  const float e = sample_exp(r.logits[i] * r.scale - r.shift);
  return e >= r.floor ? e : 0.0f;
}

// The largest of logits[i] over the allowed ids (-inf when none is).
float sample_max(const float* logits, std::int64_t n, const std::uint64_t* allowed);

// blocks[b] (b < ceil(n / 64)) = the weights of ids [64b, 64b + 64) summed in double in four
// lanes (lane j: the ids i ≡ j mod 4, ascending), then (lane0 + lane1) + (lane2 + lane3).
void sample_block_sums(const SampleRow& row, double* blocks);

}  // namespace recur::kernels
