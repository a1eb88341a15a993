// Internal to kernels/: the vector form of sampling.h's row passes, compiled by each vector ISA
// file (vec_math.h says why in an anonymous namespace). A block's 64 weights are computed a
// register at a time (8 lanes on AVX2, 16 on AVX-512: vec_math.h's 16-lane type costs AVX2 a
// third more time here than the scalar loop) in exactly sample_exp's operations, then added in
// double four lanes at a time in id order: the lane sums of the scalar definition, whatever the
// vector width.
#pragma once

#include <cstdint>

#include "kernels/sampling.h"
#include "kernels/vec_math.h"

namespace recur::kernels::detail::vec {
namespace {

typedef double D4 __attribute__((vector_size(32)));
inline constexpr int kSampleLanes = kNativeLanes;
typedef VN SF;
typedef std::int32_t SI __attribute__((vector_size(4 * kSampleLanes)));
typedef std::uint32_t SU __attribute__((vector_size(4 * kSampleLanes)));

inline SU lane_index() {
  SU l;
  for (int i = 0; i < kSampleLanes; ++i) l[i] = static_cast<std::uint32_t>(i);
  return l;
}
inline SF splat_s(float x) { return as_t(SF{}, x); }

// Lanes whose bit of `bits` (bit l for lane l) is set: all ones, the others zero.
inline SI lane_mask(std::uint32_t bits) { return (SI)(((SU{} + bits) >> lane_index()) & 1u) != 0; }

// The last ids of a row that do not fill a block, padded to a block: `pad` past them, and a mask
// word with their bits only.
struct TailBlock {
  alignas(64) float x[kSampleBlock];
  std::uint64_t word;
};
inline TailBlock tail_block(const float* x, std::int64_t i, std::int64_t n,
                            const std::uint64_t* allowed, float pad) {
  TailBlock t;
  const std::int64_t m = n - i;
  for (std::int64_t l = 0; l < kSampleBlock; ++l) t.x[l] = l < m ? x[i + l] : pad;
  t.word = allowed != nullptr ? allowed[i >> 6] : ~std::uint64_t{0};
  t.word &= (std::uint64_t{1} << m) - 1;  // 0 < m < 64
  return t;
}

inline SF block_max(const float* x, std::uint64_t word, bool masked, SF m) {
  const SF neg_inf = splat_s(-__builtin_inff());
  for (int k = 0; k < kSampleBlock / kSampleLanes; ++k) {
    SF v = load_v<SF>(x + kSampleLanes * k);
    if (masked) v = lane_mask(static_cast<std::uint32_t>(word >> (kSampleLanes * k))) ? v : neg_inf;
    m = v > m ? v : m;
  }
  return m;
}

inline float sample_max(const float* x, std::int64_t n, const std::uint64_t* allowed) {
  SF m = splat_s(-__builtin_inff());
  std::int64_t i = 0;
  for (; i + kSampleBlock <= n; i += kSampleBlock) {
    const std::uint64_t word = allowed != nullptr ? allowed[i >> 6] : ~std::uint64_t{0};
    if (word != 0) m = block_max(x + i, word, allowed != nullptr, m);
  }
  if (i < n) {
    const TailBlock t = tail_block(x, i, n, allowed, -__builtin_inff());
    m = block_max(t.x, t.word, true, m);
  }
  float best = -__builtin_inff();
  for (int l = 0; l < kSampleLanes; ++l) best = max_f(best, m[l]);
  return best;
}

// sample_exp lane by lane, in its operations.
inline SF sample_exp_lanes(SF x) {
  const SF lo = splat_s(-87.0f);
  const SF clamped = x < lo ? lo : x;
  const SF t = clamped * 1.44269504f;
  const SI k = __builtin_convertvector(t - 0.5f, SI);
  const SF kf = __builtin_convertvector(k, SF);
  const SF r = (clamped - kf * 0.693145752f) - kf * 1.42860677e-6f;
  SF p = r * (1.0f / 720.0f) + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const SF scale = (SF)((k + 127) << 23);
  return x >= lo ? p * scale : splat_s(0.0f);
}

// The sum of one block's weights (sampling.h): a register at a time, then four lanes of doubles
// in id order, which is the scalar definition's order of additions.
inline double block_sum(const SampleRow& r, const float* x, std::uint64_t word, bool masked) {
  const SF floor = splat_s(r.floor);
  const SF zero = splat_s(0.0f);
  D4 acc = {0.0, 0.0, 0.0, 0.0};
  for (int k = 0; k < kSampleBlock / kSampleLanes; ++k) {
    SF e = sample_exp_lanes(load_v<SF>(x + kSampleLanes * k) * r.scale - r.shift);
    e = e >= floor ? e : zero;
    if (masked) e = lane_mask(static_cast<std::uint32_t>(word >> (kSampleLanes * k))) ? e : zero;
    acc += __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3), D4);
    acc += __builtin_convertvector(__builtin_shufflevector(e, e, 4, 5, 6, 7), D4);
#ifdef __AVX512F__
    acc += __builtin_convertvector(__builtin_shufflevector(e, e, 8, 9, 10, 11), D4);
    acc += __builtin_convertvector(__builtin_shufflevector(e, e, 12, 13, 14, 15), D4);
#endif
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

inline void sample_block_sums(const SampleRow& r, double* blocks) {
  std::int64_t b = 0;
  for (; (b + 1) * kSampleBlock <= r.n; ++b) {
    const std::uint64_t word = r.allowed != nullptr ? r.allowed[b] : ~std::uint64_t{0};
    blocks[b] =
        word == 0 ? 0.0 : block_sum(r, r.logits + b * kSampleBlock, word, r.allowed != nullptr);
  }
  if (b * kSampleBlock < r.n) {
    const TailBlock t = tail_block(r.logits, b * kSampleBlock, r.n, r.allowed, 0.0f);
    blocks[b] = block_sum(r, t.x, t.word, true);
  }
}

}  // namespace
}  // namespace recur::kernels::detail::vec
