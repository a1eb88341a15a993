// AVX2 matmul for large batches with bf16 weights, with the exact bytes of matmul_avx2.cc's tiles.
//
// There an output element is one 8-lane accumulator (lane l takes k = 8c + l of every chunk c, in
// order of c, one fused multiply-add each) reduced by one horizontal sum. As in the AVX-512 lanes
// kernel (matmul_lanes_avx512.cc), the same chains and the same tree run here with 8 activation
// rows as a vector's lanes: the bf16-rounded activations are packed per call as, per 16-row block,
// [lane l][chunk c][row group][8 rows], and the weight rows of a task are widened to f32 once into
// a per-thread buffer (the tiles widen every weight vector they load, 3 instructions per 8 weights,
// once per tile row) from which each weight is broadcast. A micro-tile is 16 rows x 6 weight rows:
// 12 accumulators, 2 loads and 6 broadcasts per 12 fused multiply-adds, one pass per lane, the 8
// partials then added in hsum's tree as 7 vertical adds per 8 outputs.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/matmul_isa.h"

namespace recur::kernels::detail {
namespace {

constexpr int kLanes = 8;
constexpr int kGroups = 2;  // 8-row groups per micro-tile
constexpr int kCols = 6;    // weight rows (output columns) per micro-tile

// matmul_avx2.cc's hsum adds lane j to lane j + 4, then pairs 2 apart, then the two halves, the
// earlier partial always first: lanes in that order merge into a binary counter as they finish.
constexpr std::array<int, kLanes> kLaneOrder = {0, 4, 2, 6, 1, 5, 3, 7};

// Transposes 8 rows of 8 floats in place.
void transpose8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];  // u[4i + j]: rows 4i..4i+3 of column 4h + j in 128-bit half h
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

// 8 floats rounded to bf16 and back, exactly as round_to_bf16 (nearest even, NaN kept quiet).
__m256 round8(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd),
                       _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
  const __m256i quiet = _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x400000)),
                                         _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(rounded, quiet, nan));
}

template <int G, int NC>
bool merge_lane(int s, __m256 (&acc)[G][NC], __m256 (*held)[G][NC]) {
  int level = 0;
  for (int bit = s; (bit & 1) != 0; bit >>= 1, ++level) {
    for (int g = 0; g < G; ++g)
      for (int n = 0; n < NC; ++n) acc[g][n] = _mm256_add_ps(held[level][g][n], acc[g][n]);
  }
  if (level == 3) return true;
  for (int g = 0; g < G; ++g)
    for (int n = 0; n < NC; ++n) held[level][g][n] = acc[g][n];
  return false;
}

// Rows [0, rows) of this tile's packed block xp x weight rows [0, NC) of the widened wb.
template <int G, int NC>
void lanes_tile(const float* xp, std::int64_t chunks, const float* wb, std::int64_t ldwb,
                std::int64_t rows, float* y, std::int64_t ldy) {
  alignas(32) __m256 held[3][G][NC];
  __m256 acc[G][NC];
  for (int s = 0; s < kLanes; ++s) {
    const int l = kLaneOrder[static_cast<std::size_t>(s)];
    // Local to the pass, so the compiler keeps them in registers (with `acc` itself GCC 12 stored
    // all twelve to the stack after every multiply-add: 0.75x the tiles' speed).
    __m256 a[G][NC];
    for (int g = 0; g < G; ++g)
      for (int n = 0; n < NC; ++n) a[g][n] = _mm256_setzero_ps();
    const float* xl = xp + l * chunks * G * kLanes;
    const float* wl = wb + l;
    for (std::int64_t c = 0; c < chunks; ++c) {
      __m256 xv[G];
      for (int g = 0; g < G; ++g) xv[g] = _mm256_loadu_ps(xl + (c * G + g) * kLanes);
      for (int n = 0; n < NC; ++n) {
        const __m256 wv = _mm256_broadcast_ss(wl + n * ldwb + c * kLanes);
        for (int g = 0; g < G; ++g) a[g][n] = _mm256_fmadd_ps(xv[g], wv, a[g][n]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int n = 0; n < NC; ++n) acc[g][n] = a[g][n];
    if (merge_lane<G, NC>(s, acc, held)) break;
  }
  alignas(32) float out[NC][kLanes];
  for (int g = 0; g < G; ++g) {
    for (int n = 0; n < NC; ++n) _mm256_store_ps(out[n], acc[g][n]);
    const std::int64_t rg = std::min<std::int64_t>(kLanes, rows - g * kLanes);
    for (std::int64_t i = 0; i < rg; ++i)
      for (int n = 0; n < NC; ++n) y[(g * kLanes + i) * ldy + n] = out[n][i];
  }
}

template <int I>
constexpr auto tile_entry() {
  return &lanes_tile<I / kCols + 1, I % kCols + 1>;
}
template <int... I>
constexpr auto make_table(std::integer_sequence<int, I...>) {
  return std::array{tile_entry<I>()...};
}
constexpr auto kTiles = make_table(std::make_integer_sequence<int, kGroups * kCols>{});

// Weight rows [n0, n1) widened to f32, K padded with zeros to whole chunks (the tiles' tail).
void widen_rows(const std::uint16_t* w, std::int64_t k_dim, std::int64_t chunks, std::int64_t n0,
                std::int64_t n1, float* out) {
  const std::int64_t ld = chunks * kLanes;
  for (std::int64_t n = n0; n < n1; ++n) {
    const std::uint16_t* src = w + n * k_dim;
    float* dst = out + (n - n0) * ld;
    std::int64_t k = 0;
    for (; k + kLanes <= k_dim; k += kLanes) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k));
      _mm256_storeu_ps(dst + k,
                       _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
    for (; k < k_dim; ++k) dst[k] = bf16_to_f32(src[k]);
    for (; k < ld; ++k) dst[k] = 0.0f;
  }
}

}  // namespace

std::int64_t lanes_x_bytes_avx2(const ActivationRows& a) {
  return (a.n_rows + 15) / 16 * 16 * ((a.k_dim + kLanes - 1) / kLanes * kLanes) *
         static_cast<std::int64_t>(sizeof(float));
}

// Rows [r0, r0 + 16): the 16-row block r0 / 16.
void pack_x_lanes_avx2(const ActivationRows& a, std::int64_t r0, std::int64_t, void* xp) {
  static_assert(kPrepRows == kGroups * kLanes);
  const std::int64_t block = r0 / (kGroups * kLanes);
  const std::int64_t chunks = (a.k_dim + kLanes - 1) / kLanes;
  const std::int64_t groups =
      std::min<std::int64_t>(kGroups, (a.n_rows - r0 + kLanes - 1) / kLanes);
  float* out = static_cast<float*>(xp) + block * kGroups * kLanes * chunks * kLanes;
  alignas(32) float tail[kLanes];
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t rg0 = r0 + g * kLanes;
    const int valid = static_cast<int>(std::min<std::int64_t>(kLanes, a.n_rows - rg0));
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t k = c * kLanes, left = std::min<std::int64_t>(kLanes, a.k_dim - k);
      __m256 r[8];
      for (int i = 0; i < kLanes; ++i) {
        if (i >= valid) {
          r[i] = _mm256_setzero_ps();
          continue;
        }
        const float* src = a.x + (rg0 + i) * a.k_dim + k;
        if (left == kLanes) {
          r[i] = round8(_mm256_loadu_ps(src));
        } else {
          for (int j = 0; j < kLanes; ++j) tail[j] = j < left ? src[j] : 0.0f;
          r[i] = round8(_mm256_load_ps(tail));
        }
      }
      transpose8(r);
      for (int l = 0; l < kLanes; ++l)
        _mm256_storeu_ps(out + ((l * chunks + c) * groups + g) * kLanes, r[l]);
    }
  }
}

void matmul_block_lanes_avx2(const MatmulOperands& op, const MatmulBlock& b) {
  const auto* w = static_cast<const std::uint16_t*>(op.w.data);
  const std::int64_t k_dim = op.w.cols, chunks = (k_dim + kLanes - 1) / kLanes, ldy = op.w.rows;
  const std::int64_t ldwb = chunks * kLanes;
  float* wbuf = lanes_weight_scratch((b.n1 - b.n0) * ldwb);
  widen_rows(w, k_dim, chunks, b.n0, b.n1, wbuf);
  const std::int64_t block_elems = kGroups * kLanes * chunks * kLanes;
  for (std::int64_t m = b.m0; m < b.m1; m += kGroups * kLanes) {
    const std::int64_t rows = std::min<std::int64_t>(kGroups * kLanes, b.m1 - m);
    const int groups = static_cast<int>((rows + kLanes - 1) / kLanes);
    for (std::int64_t n = b.n0; n < b.n1; n += kCols) {
      const int cols = static_cast<int>(std::min<std::int64_t>(kCols, b.n1 - n));
      kTiles[static_cast<std::size_t>((groups - 1) * kCols + cols - 1)](
          static_cast<const float*>(op.xp) + m / (kGroups * kLanes) * block_elems, chunks,
          wbuf + (n - b.n0) * ldwb, ldwb, rows, op.y + m * ldy + n, ldy);
    }
  }
}

}  // namespace recur::kernels::detail
