// AVX2+FMA matmul blocks (compiled with -mavx2 -mfma -mf16c; only run when detected). bf16
// weights are widened to f32 and multiplied with bf16-rounded activations (products are exact, so
// FMA matches multiply-then-add); f32 / f16 weights use f32 activations. One accumulator per
// output element, lanes over K, one horizontal sum: batch invariant like the AVX-512 path.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_isa.h"

namespace recur::kernels::detail {
namespace {

constexpr int kMr = 2;
constexpr int kNr = 4;

__m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__m256 load8_bf16(const std::uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
__m256 load8_f16(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <DType WT>
__m256 load_w(const void* row, std::int64_t k) {
  if constexpr (WT == DType::kF32) return load8(static_cast<const float*>(row) + k);
  if constexpr (WT == DType::kBF16) return load8_bf16(static_cast<const std::uint16_t*>(row) + k);
  if constexpr (WT == DType::kF16) return load8_f16(static_cast<const std::uint16_t*>(row) + k);
}

float hsum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Copies the last n < 8 elements of a row into a zero-padded buffer of 8.
template <DType WT>
void tail_copy(const void* row, std::int64_t k, std::int64_t n, void* buf) {
  const std::int64_t bytes = dtype_bytes(WT);
  std::memset(buf, 0, 8 * static_cast<std::size_t>(bytes));
  std::memcpy(buf, static_cast<const char*>(row) + k * bytes, static_cast<std::size_t>(n * bytes));
}

template <int RM, int RN, DType WT>
void tile(const float* x, std::int64_t ldx, const char* w, std::int64_t w_row_bytes,
          std::int64_t k_dim, float* y, std::int64_t ldy, const char* ahead = nullptr,
          bool near = false) {
  __m256 acc[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  std::int64_t k = 0;
  for (; k + 8 <= k_dim; k += 8) {
    // Decode: the RN rows kStreamAhead rows on, in address order (their RN·K weights are
    // contiguous) at the rate the tile reads them - each line that starts within this step's
    // RN·8 weights' worth of bytes - so the interleaved row reads find their lines in L2.
    if (ahead != nullptr) {
      constexpr std::int64_t kStep =
          RN * 8 * static_cast<std::int64_t>(sizeof(float)) / (WT == DType::kF32 ? 1 : 2);
      const std::int64_t off = k / 8 * kStep;
      for (std::int64_t line = (off + 63) / 64 * 64; line < off + kStep; line += 64)
        _mm_prefetch(ahead + line, _MM_HINT_T1);
    }
    // Intel (DecodeOrder::l1_prefetch): the next tile's rows at this column into L1 as well, one
    // request per 64-byte line.
    if (WT == DType::kBF16 && near && k % 32 == 0) {
      for (int j = 0; j < RN; ++j) _mm_prefetch(w + (RN + j) * w_row_bytes + k * 2, _MM_HINT_T0);
    }
    __m256 wv[RN];
    for (int j = 0; j < RN; ++j) wv[j] = load_w<WT>(w + j * w_row_bytes, k);
    for (int i = 0; i < RM; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * ldx + k);
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < k_dim) {
    const std::int64_t n = k_dim - k;
    alignas(32) float xb[8];
    alignas(32) float wb[8];
    __m256 wv[RN];
    for (int j = 0; j < RN; ++j) {
      tail_copy<WT>(w + j * w_row_bytes, k, n, wb);
      wv[j] = load_w<WT>(wb, 0);
    }
    for (int i = 0; i < RM; ++i) {
      tail_copy<DType::kF32>(x + i * ldx, k, n, xb);
      const __m256 xv = _mm256_load_ps(xb);
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) y[i * ldy + j] = hsum(acc[i][j]);
}

// Weight rows in slices of kSliceN, each passed by every row group of x while it is in cache: a
// decode task spans hundreds of weight rows, which 3-8 activation rows would otherwise read from
// memory once per row group.
constexpr std::int64_t kSliceN = 64;
constexpr std::int64_t kStreamAhead = 64;
// Groups of 4 activation rows run 4x2 tiles: each weight vector widened once for 4 rows instead
// of once per row pair (8 accumulators; the widening was a third of the work on FMA ports).
constexpr int kQuadRows = 4;
constexpr int kQuadCols = 2;

template <DType WT>
void run_block(const float* x, const WeightView& w, const MatmulBlock& b, float* y, bool stream) {
  const std::int64_t k_dim = w.cols;
  const std::int64_t rb = k_dim * dtype_bytes(WT);
  const char* wd = static_cast<const char*>(w.data);
  const bool l1 = stream && WT == DType::kBF16 && decode_order().l1_prefetch;
  for (std::int64_t n0 = b.n0; n0 < b.n1; n0 += kSliceN) {
    const std::int64_t n1 = std::min(b.n1, n0 + kSliceN);
    for (std::int64_t m = b.m0; m < b.m1;) {
      const std::int64_t left = b.m1 - m;
      const std::int64_t rm = left >= kQuadRows ? kQuadRows : std::min<std::int64_t>(kMr, left);
      const std::int64_t cols = rm == kQuadRows ? kQuadCols : kNr;
      const bool near = l1 && m == b.m0;
      for (std::int64_t n = n0; n < n1; n += cols) {
        const float* xm = x + m * k_dim;
        float* ym = y + m * w.rows + n;
        const std::int64_t rn = std::min<std::int64_t>(cols, n1 - n);
        const char* wn = wd + n * rb;
        // Streaming calls prefetch ahead on their first row group only (the rest find the slice
        // in cache), and not past the block.
        const char* ahead = stream && m == b.m0 && n + kStreamAhead + cols <= b.n1
                                ? wn + kStreamAhead * rb
                                : nullptr;
        if (rm == kQuadRows && rn == kQuadCols) {
          tile<kQuadRows, kQuadCols, WT>(xm, k_dim, wn, rb, k_dim, ym, w.rows, ahead, near);
          continue;
        }
        if (rm == kMr && rn == kNr) {
          tile<kMr, kNr, WT>(xm, k_dim, wn, rb, k_dim, ym, w.rows, ahead, near);
          continue;
        }
        // A single row (decode) still runs four weight rows side by side: four independent
        // chains, where one output at a time waits on each multiply-add's latency.
        if (rm == 1 && rn == kNr) {
          tile<1, kNr, WT>(xm, k_dim, wn, rb, k_dim, ym, w.rows, ahead, near);
          continue;
        }
        // Edges: one output element at a time; same accumulation as the full tile.
        for (std::int64_t i = 0; i < rm; ++i)
          for (std::int64_t j = 0; j < rn; ++j)
            tile<1, 1, WT>(xm + i * k_dim, k_dim, wn + j * rb, rb, k_dim, ym + i * w.rows + j,
                           w.rows);
      }
      m += rm;
    }
  }
}

}  // namespace

std::int64_t round_rows_bytes(const ActivationRows& a) {
  return a.n_rows * a.k_dim * static_cast<std::int64_t>(sizeof(float));
}

void round_rows_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict src = a.row(r);
    float* __restrict dst = static_cast<float*>(out) + r * a.k_dim;
    for (std::int64_t i = 0; i < a.k_dim; ++i) dst[i] = round_to_bf16(src[i]);
  }
}

void matmul_block_avx2(const MatmulOperands& op, const MatmulBlock& b) {
  const bool stream = op.n_rows <= kStreamRows;
  switch (op.w.dtype) {
    case DType::kBF16:
      return run_block<DType::kBF16>(static_cast<const float*>(op.xp), op.w, b, op.y, stream);
    case DType::kF32:
      return run_block<DType::kF32>(op.x, op.w, b, op.y, stream);
    case DType::kF16:
      return run_block<DType::kF16>(op.x, op.w, b, op.y, stream);
  }
}

}  // namespace recur::kernels::detail
