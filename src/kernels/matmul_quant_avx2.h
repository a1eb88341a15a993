// Internal to kernels/: the quantized matmul over quant.h's packed layout in 256-bit vectors, for
// AVX2 (matmul_quant_avx2.cc) and AVX-VNNI (matmul_quant_avxvnni.cc), each file compiling its own
// copy with its flags (the anonymous namespace; vec_math.h says why). Each 64-byte vector of a
// group record is two 32-byte halves, rows 0-7 and rows 8-15 of the block, so a half is 8 rows'
// 32-bit lanes. The integer dot products are exact whichever instructions form them (a Dot
// policy), and each lane's f32 operations are the reference's in its order, so the bytes equal
// ref::matmul_quant's.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/matmul_isa.h"
#include "kernels/quant.h"

namespace recur::kernels::detail {
namespace {

constexpr int kTileRows = 4;
constexpr std::int64_t kHalfRows = kQuantBlockRows / 2;

// The 8 values of one half's rows from a 16-value array of group parameters.
inline __m256 load_group_params(const std::uint8_t* p, DType dtype, int half) {
  switch (dtype) {
    case DType::kBF16:
      return _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * half))),
          16));
    case DType::kF16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * half)));
    case DType::kF32:
      break;
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * half);
}

inline __m256i broadcast4(const std::int8_t* p) {
  std::int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Activation rows [r0, r0 + kRows) against one half (8 weight rows) of a block; `mask` holds
// all-ones in the lanes of rows that exist. Dot: how 4 code bytes meet 4 activations in a lane.
// MXFP4 codes (kCodes) are e2m1 indices: one vpshufb per nibble vector turns them into their
// unsigned affine codes (quant.h kMxfp4AffineCodes), the rest is the same.
template <class Dot, int kBits, int kGroup, DType kDType, QuantCodes kCodes, int kRows>
void half_tile(const QuantizedActivations& a, std::int64_t r0, const std::uint8_t* block,
               std::int64_t cols, int half, float* y, std::int64_t ldy, __m256i mask) {
  constexpr std::int64_t kCodeBytes = kQuantBlockRows * kGroup * kBits / 8;
  constexpr std::int64_t kParamBytes = kQuantBlockRows * (kDType == DType::kF32 ? 4 : 2);
  constexpr std::int64_t kRecordBytes = kCodeBytes + 2 * kParamBytes;
  const std::int64_t groups = cols / kGroup;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i mx_codes = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4AffineCodes)));
  __m256 acc[kRows], bias[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = bias[r] = _mm256_setzero_ps();
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint8_t* rec = block + g * kRecordBytes;
    const std::int8_t* x[kRows];
    for (int r = 0; r < kRows; ++r) x[r] = a.q + (r0 + r) * cols + g * kGroup;
    __m256i dot[kRows];
    for (int r = 0; r < kRows; ++r) dot[r] = _mm256_setzero_si256();
    constexpr int kStep = kBits == 8 ? 4 : 8;  // elements per 32-bit lane of a code vector
    for (int k = 0; k < kGroup / kStep; ++k) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 64 * k + 32 * half));
      __m256i lo = _mm256_and_si256(v, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      if constexpr (kCodes == QuantCodes::kMxfp4) {
        lo = _mm256_shuffle_epi8(mx_codes, lo);
        hi = _mm256_shuffle_epi8(mx_codes, hi);
      }
      for (int r = 0; r < kRows; ++r) {
        if constexpr (kBits == 8) {
          dot[r] = Dot::codes8(dot[r], v, lo, hi, broadcast4(x[r] + 4 * k));
        } else {
          dot[r] =
              Dot::codes4(dot[r], lo, hi, broadcast4(x[r] + 8 * k), broadcast4(x[r] + 8 * k + 4));
        }
      }
    }
    const __m256 s = load_group_params(rec + kCodeBytes, kDType, half);
    const __m256 b = load_group_params(rec + kCodeBytes + kParamBytes, kDType, half);
    for (int r = 0; r < kRows; ++r) {
      const std::int64_t at = (r0 + r) * groups + g;
      const __m256 sd = _mm256_mul_ps(s, _mm256_set1_ps(a.d[at]));
      acc[r] = _mm256_fmadd_ps(sd, _mm256_cvtepi32_ps(dot[r]), acc[r]);
      bias[r] = _mm256_fmadd_ps(b, _mm256_set1_ps(a.xsum[at]), bias[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm256_maskstore_ps(y + (r0 + r) * ldy, mask, _mm256_add_ps(acc[r], bias[r]));
  }
}

template <class Dot, int kBits, int kGroup, DType kDType, QuantCodes kCodes>
void quant_block(const MatmulOperands& op, const MatmulBlock& b) {
  const WeightView& w = op.w;
  const QuantizedActivations a =
      quantized_rows_view(const_cast<void*>(op.xp), op.n_rows, w.cols, kGroup);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (std::int64_t n = b.n0; n < b.n1; n += kQuantBlockRows) {
    const auto* block = static_cast<const std::uint8_t*>(w.slice_rows(n, 0).data);
    for (int half = 0; half < 2; ++half) {
      const std::int64_t first = n + half * kHalfRows;
      const std::int64_t lanes = std::min<std::int64_t>(kHalfRows, w.rows - first);
      if (lanes <= 0) break;
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), lane);
      float* y = op.y + first;
      std::int64_t r = b.m0;
      for (; r + kTileRows <= b.m1; r += kTileRows) {
        half_tile<Dot, kBits, kGroup, kDType, kCodes, kTileRows>(a, r, block, w.cols, half, y,
                                                                 w.rows, mask);
      }
      for (; r < b.m1; ++r) {
        half_tile<Dot, kBits, kGroup, kDType, kCodes, 1>(a, r, block, w.cols, half, y, w.rows,
                                                         mask);
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels::detail
