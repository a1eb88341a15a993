// AVX-512 matmul blocks (compiled with -mavx512f/bw/vl/bf16; only run when isa_supported(kAvx512)).
// bf16 weights: vdpbf16ps on bf16 activations; f32 / f16 weights: f32 FMA. Every output element
// is one accumulator whose lanes walk K in the same order, reduced by the same horizontal sum,
// whatever the micro-tile it sits in, so a row's bytes never depend on the batch around it.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/matmul_isa.h"

namespace recur::kernels::detail {
namespace {

constexpr int kMr = 4;  // activation rows per micro-tile
constexpr int kNr = 4;  // weight rows (output columns) per micro-tile
// Decode-sized calls (n_rows <= kStreamRows) read each weight once, straight from memory, in the
// order and with the prefetch decode_order() picks per CPU vendor:
// - kRows: the weight rows kPrefetchRows ahead into L2, in address order (508 MB lm_head GEMV at
//   4 rows: 1.9x on Zen 4), and each task's first kPrefetchRows rows up front;
// - kNearFar (l1_prefetch): every line into L2 kFarBytes ahead of its use and again into L1 about
//   kNearBytes ahead. On the Xeon VM the L2-only prefetch left the dot products waiting on L2
//   hits (4-row calls 0.60-0.81 of the read probe, the less the smaller the call); with the L1
//   request 0.80-0.91, one row 0.95-1.02.
// kNext (9-23 rows, run_block_next): the lines of the weight rows at `next`, RN per step, into L1.
enum class Ahead { kNone, kRows, kNearFar, kNext };
constexpr std::int64_t kPrefetchRows = 16 * kNr;
constexpr std::int64_t kFarBytes = std::int64_t{32} << 10;  // 16-64 KiB alike; 128 KiB slower
constexpr std::int64_t kNearBytes = 4096;                   // 2-8 KiB alike

// Horizontal sum of one accumulator in a fixed, explicit tree: 256-bit halves, 128-bit halves,
// lanes (0,2)(1,3), then (0,1), the first operand of each add the same every time. This is GCC's
// _mm512_reduce_add_ps exactly (so the bytes did not change), written out so that no compiler
// can pick another order.
inline float hsum(__m512 v) {
  const __m256 a = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
  const __m128 b = _mm_add_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
  const __m128 c = _mm_add_ps(b, _mm_shuffle_ps(b, b, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

// hsum of four accumulators side by side: every add of its tree with the same two operands in
// the same order, four results per instruction instead of one (lanes 0, 4, 8, 12 of the last
// level), so 4 outputs cost 11 instructions instead of 32.
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // 256-bit halves: [a.hi | b.hi] + [a.lo | b.lo].
  const __m512 ab =
      _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0xEE), _mm512_shuffle_f32x4(a, b, 0x44));
  const __m512 cd =
      _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0xEE), _mm512_shuffle_f32x4(c, d, 0x44));
  // 128-bit halves of each: 128-bit lane q of the sum belongs to accumulator q.
  const __m512 e =
      _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0xDD), _mm512_shuffle_f32x4(ab, cd, 0x88));
  const __m512 f = _mm512_add_ps(e, _mm512_permute_ps(e, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 g = _mm512_add_ps(f, _mm512_movehdup_ps(f));
  const __m512i lanes = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(lanes, g));
}

template <int RM, int RN>
void reduce_store(const __m512 (&acc)[RM][RN], float* y, std::int64_t ldy) {
  for (int i = 0; i < RM; ++i) {
    if constexpr (RN == 4) {
      _mm_storeu_ps(y + i * ldy, hsum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
    } else {
      for (int j = 0; j < RN; ++j) y[i * ldy + j] = hsum(acc[i][j]);
    }
  }
}

// x: bf16 [rows, ldx] zero-padded to a multiple of 32; w: bf16 rows of k_dim at stride ldw.
template <int RM, int RN, Ahead A>
void tile_bf16(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w, std::int64_t ldw,
               std::int64_t k_dim, float* y, std::int64_t ldy, const char* next = nullptr) {
  __m512 acc[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
  // The tile's RN rows are contiguous (ldw == k_dim): the lines a fixed distance on, RN per step
  // in address order, are one ascending stream of requests (0.87 against 0.83 of the read probe
  // at 4 activation rows on the dev VM, against prefetching each row's own line).
  const char* far = A == Ahead::kNext
                        ? next
                        : reinterpret_cast<const char*>(w) +
                              (A == Ahead::kRows ? kPrefetchRows * ldw * 2 : kFarBytes);
  std::int64_t k = 0;
  for (; k + 32 <= k_dim; k += 32) {
    __m512i wv[RN];
    for (int j = 0; j < RN; ++j) wv[j] = _mm512_loadu_si512(w + j * ldw + k);
    if constexpr (A == Ahead::kNext) {
      for (int j = 0; j < RN; ++j) _mm_prefetch(far + (k / 32 * RN + j) * 64, _MM_HINT_T0);
    } else if constexpr (A != Ahead::kNone) {
      for (int j = 0; j < RN; ++j) _mm_prefetch(far + (k / 32 * RN + j) * 64, _MM_HINT_T1);
    }
    if constexpr (A == Ahead::kNearFar) {  // into L1: the next tile's rows at this column
      for (int j = 0; j < RN; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(w + (RN + j) * ldw + k), _MM_HINT_T0);
      }
    }
    for (int i = 0; i < RM; ++i) {
      const __m512i xv = _mm512_loadu_si512(x + i * ldx + k);
      for (int j = 0; j < RN; ++j)
        acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  if (k < k_dim) {
    const __mmask32 mask = _cvtu32_mask32((1u << (k_dim - k)) - 1u);
    __m512i wv[RN];
    for (int j = 0; j < RN; ++j) wv[j] = _mm512_maskz_loadu_epi16(mask, w + j * ldw + k);
    for (int i = 0; i < RM; ++i) {
      const __m512i xv = _mm512_loadu_si512(x + i * ldx + k);
      for (int j = 0; j < RN; ++j)
        acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  reduce_store<RM, RN>(acc, y, ldy);
}

// RM activation rows against RN weight rows read one after another, each weight row with its RM
// accumulators. With one row and no software prefetch this is a single sequential stream the
// hardware prefetcher follows (RN interleaved rows are RN streams 2-8 KiB apart, which AMD's does
// not: on the Zen 4 VM at 1 row 0.96 of the read probe against 0.89 interleaved with software
// prefetch); with 2-8 rows on Intel the stream is prefetched ahead of itself (Ahead). The RN
// chains are independent, so they still overlap out of order. Same per-element order as
// tile_bf16: bytes are identical.
template <int RM, int RN, Ahead A>
void seq_rows_bf16(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                   std::int64_t ldw, std::int64_t k_dim, float* y, std::int64_t ldy) {
  const std::int64_t k_main = k_dim / 32 * 32;
  const __mmask32 mask = _cvtu32_mask32((1u << (k_dim - k_main)) - 1u);
  const std::int64_t far = A == Ahead::kRows ? kPrefetchRows * ldw * 2 : kFarBytes;
  for (int j = 0; j < RN; ++j) {
    const std::uint16_t* row = w + j * ldw;
    __m512 acc[RM];
    for (int i = 0; i < RM; ++i) acc[i] = _mm512_setzero_ps();
    for (std::int64_t k = 0; k < k_main; k += 32) {
      const char* here = reinterpret_cast<const char*>(row + k);
      if constexpr (A != Ahead::kNone) _mm_prefetch(here + far, _MM_HINT_T1);
      if constexpr (A == Ahead::kNearFar) _mm_prefetch(here + kNearBytes, _MM_HINT_T0);
      const __m512i wv = _mm512_loadu_si512(row + k);
      for (int i = 0; i < RM; ++i)
        acc[i] =
            _mm512_dpbf16_ps(acc[i], (__m512bh)_mm512_loadu_si512(x + i * ldx + k), (__m512bh)wv);
    }
    if (k_main < k_dim) {
      const __m512i wv = _mm512_maskz_loadu_epi16(mask, row + k_main);
      for (int i = 0; i < RM; ++i)
        acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)_mm512_loadu_si512(x + i * ldx + k_main),
                                  (__m512bh)wv);
    }
    for (int i = 0; i < RM; ++i) y[i * ldy + j] = hsum(acc[i]);
  }
}

__m512 load16_as_f32(const float* p) { return _mm512_loadu_ps(p); }
__m512 load16_as_f32(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
__m512 load16_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
__m512 load16_masked(const std::uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// x f32 [rows, ldx]; w f32 or f16 rows of k_dim at stride ldw; f32 FMA, lanes over K.
template <int RM, int RN, typename W>
void tile_f32(const float* x, std::int64_t ldx, const W* w, std::int64_t ldw, std::int64_t k_dim,
              float* y, std::int64_t ldy) {
  __m512 acc[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 16 <= k_dim; k += 16) {
    __m512 wv[RN];
    for (int j = 0; j < RN; ++j) wv[j] = load16_as_f32(w + j * ldw + k);
    for (int i = 0; i < RM; ++i) {
      const __m512 xv = _mm512_loadu_ps(x + i * ldx + k);
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < k_dim) {
    const __mmask16 mask = _cvtu32_mask16((1u << (k_dim - k)) - 1u);
    __m512 wv[RN];
    for (int j = 0; j < RN; ++j) wv[j] = load16_masked(w + j * ldw + k, mask);
    for (int i = 0; i < RM; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + i * ldx + k);
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  reduce_store<RM, RN>(acc, y, ldy);
}

// Tile<rm, rn>::run for every edge shape 1..kMr x 1..kNr, indexed by (rm - 1) * kNr + rn - 1.
template <template <int, int> class Tile, int... I>
constexpr auto make_tile_table(std::integer_sequence<int, I...>) {
  return std::array{&Tile<I / kNr + 1, I % kNr + 1>::run...};
}

template <template <int, int> class Tile, typename... Args>
void tile_any(int rm, int rn, Args... args) {
  static constexpr auto kTable =
      make_tile_table<Tile>(std::make_integer_sequence<int, kMr * kNr>{});
  kTable[static_cast<std::size_t>((rm - 1) * kNr + rn - 1)](args...);
}

// The same up to kNextMr rows (run_block_next's balanced row tiles).
constexpr int kNextMr = 5;
template <template <int, int> class Tile, typename... Args>
void tile_any_next(int rm, int rn, Args... args) {
  static constexpr auto kTable =
      make_tile_table<Tile>(std::make_integer_sequence<int, kNextMr * kNr>{});
  kTable[static_cast<std::size_t>((rm - 1) * kNr + rn - 1)](args...);
}

template <int RM, int RN>
struct Bf16Tile {
  static void run(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                  std::int64_t ldw, std::int64_t k_dim, float* y, std::int64_t ldy) {
    tile_bf16<RM, RN, Ahead::kNone>(x, ldx, w, ldw, k_dim, y, ldy);
  }
};
template <int RM, int RN>
struct Bf16NextTile {
  static void run(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                  std::int64_t ldw, std::int64_t k_dim, float* y, std::int64_t ldy,
                  const char* next) {
    tile_bf16<RM, RN, Ahead::kNext>(x, ldx, w, ldw, k_dim, y, ldy, next);
  }
};
template <int RM, int RN>
struct Bf16StreamTile {
  static void run(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                  std::int64_t ldw, std::int64_t k_dim, float* y, std::int64_t ldy,
                  DecodeOrder order) {
    if (RM == 1 && order.one_row_sequential) {
      seq_rows_bf16<1, RN, Ahead::kNone>(x, ldx, w, ldw, k_dim, y, ldy);
    } else if (RM > 1 && order.rows_sequential) {
      if (order.l1_prefetch) {
        seq_rows_bf16<RM, RN, Ahead::kNearFar>(x, ldx, w, ldw, k_dim, y, ldy);
      } else {
        seq_rows_bf16<RM, RN, Ahead::kRows>(x, ldx, w, ldw, k_dim, y, ldy);
      }
    } else if (order.l1_prefetch) {
      tile_bf16<RM, RN, Ahead::kNearFar>(x, ldx, w, ldw, k_dim, y, ldy);
    } else {
      tile_bf16<RM, RN, Ahead::kRows>(x, ldx, w, ldw, k_dim, y, ldy);
    }
  }
};
template <int RM, int RN>
struct F32Tile {
  static void run(const float* x, std::int64_t ldx, const float* w, std::int64_t ldw,
                  std::int64_t k_dim, float* y, std::int64_t ldy) {
    tile_f32<RM, RN>(x, ldx, w, ldw, k_dim, y, ldy);
  }
};
template <int RM, int RN>
struct F16Tile {
  static void run(const float* x, std::int64_t ldx, const std::uint16_t* w, std::int64_t ldw,
                  std::int64_t k_dim, float* y, std::int64_t ldy) {
    tile_f32<RM, RN>(x, ldx, w, ldw, k_dim, y, ldy);
  }
};

// Weight rows in slices of kSliceN, each passed by every row tile of x while it is in L1/L2: a
// streaming task spans thousands of weight rows, which 5-8 activation rows (two row tiles) would
// otherwise read from memory twice.
constexpr std::int64_t kSliceN = 64;

template <template <int, int> class Tile, typename X, typename W, typename... Extra>
void run_block(const X* x, std::int64_t ldx, const W* w, const MatmulBlock& b, std::int64_t k_dim,
               float* y, std::int64_t ldy, Extra... extra) {
  for (std::int64_t n0 = b.n0; n0 < b.n1; n0 += kSliceN) {
    const std::int64_t n1 = std::min(b.n1, n0 + kSliceN);
    for (std::int64_t m = b.m0; m < b.m1; m += kMr) {
      const int rm = static_cast<int>(std::min<std::int64_t>(kMr, b.m1 - m));
      for (std::int64_t n = n0; n < n1; n += kNr) {
        const int rn = static_cast<int>(std::min<std::int64_t>(kNr, n1 - n));
        tile_any<Tile>(rm, rn, x + m * ldx, ldx, w + n * k_dim, k_dim, k_dim, y + m * ldy + n, ldy,
                       extra...);
      }
    }
  }
}

// 9-23 activation rows (kSliceStreamRows; of 17-23 only a grouped call's parts, lanes_call in
// dispatch.cc): run_block's slices and row tiles, but the second row
// tile, reading the slice from L2, requests the next slice of the block's weight (the task's next
// block under the ranged split; past the weight's end, b.next's: the next expert's), so memory
// works while the later tiles compute. In run_block the first tile of a slice waited on memory
// and the others on nothing: an MoE prefill's 9-15-row experts read their weights at a third of
// the probe, time on hot weights plus stream time.
// Qwen3-Next's experts in moe_bench, Zen 5 VM: 10 rows 1.2x, 12 rows 1.3x. The second tile and
// not the later ones, spread (0.9x): its requests are the whole next slice, and it needs them
// soonest. One pass of all 9-15 rows instead (run_block_wide's design): 0.7-0.8x at K 2048,
// whose 9-15 x rows do not stay in L1 beside the weight stream. Balanced tiles of up to 5 rows
// (below): 10-row experts 1.06-1.14x more (moe_bench --even 1, two rounds), random routing alike.
void run_block_next(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                    const MatmulBlock& b, std::int64_t k_dim, std::int64_t w_rows, float* y,
                    std::int64_t ldy) {
  for (std::int64_t n0 = b.n0; n0 < b.n1; n0 += kSliceN) {
    const std::int64_t n1 = std::min(b.n1, n0 + kSliceN);
    // The next slice: of w, or past its end the first rows of the next task's weight.
    const std::uint16_t* next =
        n1 < w_rows ? w + n1 * k_dim : static_cast<const std::uint16_t*>(b.next);
    const std::int64_t next_rows = n1 < w_rows ? std::min(w_rows - n1, kSliceN) : kSliceN;
    // Row tiles of at most kNextMr rows, balanced (10 rows: 5 + 5, 9: 4 + 5), not kMr-row tiles
    // and a remainder (10: 4 + 4 + 2, 9: 4 + 4 + 1): fewer passes over the slice in L2 and no
    // 1-2-row tile, whose weight loads outnumber its products.
    const std::int64_t rows = b.m1 - b.m0;
    const std::int64_t n_tiles = (rows + kNextMr - 1) / kNextMr;
    for (std::int64_t t = 0, m = b.m0; t < n_tiles; ++t) {
      const int rm = static_cast<int>((rows * (t + 1)) / n_tiles - (rows * t) / n_tiles);
      const bool requests = t == 1 && next != nullptr;
      for (std::int64_t n = n0; n < n1; n += kNr) {
        const int rn = static_cast<int>(std::min<std::int64_t>(kNr, n1 - n));
        if (requests && rn == kNr && n - n0 + kNr <= next_rows) {
          tile_any_next<Bf16NextTile>(rm, rn, x + m * ldx, ldx, w + n * k_dim, k_dim, k_dim,
                                      y + m * ldy + n, ldy,
                                      reinterpret_cast<const char*>(next + (n - n0) * k_dim));
        } else {
          tile_any_next<Bf16Tile>(rm, rn, x + m * ldx, ldx, w + n * k_dim, k_dim, k_dim,
                                  y + m * ldy + n, ldy);
        }
      }
      m += rm;
    }
  }
}

// 5-8 activation rows in one pass over the weights, kWideNr weight rows at a time (kRows order).
// In two passes of kMr rows the second pass over a slice reads it from L2 and its prefetches
// repeat the first pass's, so memory idled through half of every slice. One pass keeps the
// requests flowing: decode of 8 sequences (qwen3.5-0.8b, Zen 4 VM) 1.07x tokens/s, 87-91% of the
// weights + state bound against 68-86%, alternating in one run. RM x kWideNr accumulators,
// kWideNr weight vectors and one activation vector fit the 32 registers.
constexpr int kWideNr = 3;

template <int RM>
void run_block_wide(const std::uint16_t* x, std::int64_t ldx, const std::uint16_t* w,
                    const MatmulBlock& b, std::int64_t k_dim, float* y, std::int64_t ldy) {
  const std::uint16_t* xm = x + b.m0 * ldx;
  float* ym = y + b.m0 * ldy;
  std::int64_t n = b.n0;
  for (; n + kWideNr <= b.n1; n += kWideNr) {
    tile_bf16<RM, kWideNr, Ahead::kRows>(xm, ldx, w + n * k_dim, k_dim, k_dim, ym + n, ldy);
  }
  for (; n < b.n1; ++n) {
    tile_bf16<RM, 1, Ahead::kRows>(xm, ldx, w + n * k_dim, k_dim, k_dim, ym + n, ldy);
  }
}

void run_block_wide_any(std::int64_t rows, const std::uint16_t* x, std::int64_t ldx,
                        const std::uint16_t* w, const MatmulBlock& b, std::int64_t k_dim, float* y,
                        std::int64_t ldy) {
  switch (rows) {
    case 5:
      return run_block_wide<5>(x, ldx, w, b, k_dim, y, ldy);
    case 6:
      return run_block_wide<6>(x, ldx, w, b, k_dim, y, ldy);
    case 7:
      return run_block_wide<7>(x, ldx, w, b, k_dim, y, ldy);
    default:
      return run_block_wide<8>(x, ldx, w, b, k_dim, y, ldy);
  }
}

// kRows: a streaming task's first kPrefetchRows weight rows have no tile prefetching them: ask
// for them all up front so the task starts with a full queue of misses instead of one row's
// worth. (Not with kNearFar: 4-row calls on 2 MB matrices read 0.71 of the probe with the burst,
// 0.75 without.)
void prefetch_block_head(const std::uint16_t* w, const MatmulBlock& b, std::int64_t k_dim) {
  const auto* p = reinterpret_cast<const char*>(w + b.n0 * k_dim);
  const std::int64_t bytes = (std::min(b.n1, b.n0 + kPrefetchRows) - b.n0) * k_dim * 2;
  for (std::int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

// K rounded up to the 32 bf16 of one vdpbf16ps step: the tiles' x rows.
std::int64_t padded_k(std::int64_t k_dim) { return (k_dim + 31) / 32 * 32; }

}  // namespace

std::int64_t to_bf16_rows_bytes(const ActivationRows& a) {
  return a.n_rows * padded_k(a.k_dim) * 2;
}

void to_bf16_rows_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  const std::int64_t ld = padded_k(a.k_dim);
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* __restrict src = a.row(r);
    std::uint16_t* __restrict dst = static_cast<std::uint16_t*>(out) + r * ld;
    for (std::int64_t k = 0; k < a.k_dim; ++k) dst[k] = f32_to_bf16(src[k]);
    for (std::int64_t k = a.k_dim; k < ld; ++k) dst[k] = 0;
  }
}

void matmul_block_avx512(const MatmulOperands& op, const MatmulBlock& b) {
  const WeightView& w = op.w;
  switch (w.dtype) {
    case DType::kBF16: {
      const auto* x = static_cast<const std::uint16_t*>(op.xp);
      if (op.ranged && op.n_rows > kStreamRows && op.n_rows <= kSliceStreamRows) {
        // The task's first slice has no earlier tile requesting it.
        prefetch_block_head(static_cast<const std::uint16_t*>(w.data), b, w.cols);
        run_block_next(x, padded_k(w.cols), static_cast<const std::uint16_t*>(w.data), b, w.cols,
                       w.rows, op.y, w.rows);
        return;
      }
      if (op.n_rows <= kStreamRows) {
        const DecodeOrder order = decode_order().for_part(op.scattered);
        if (!order.l1_prefetch && (op.n_rows > 1 || !order.one_row_sequential)) {
          prefetch_block_head(static_cast<const std::uint16_t*>(w.data), b, w.cols);
        }
        const std::int64_t rows = b.m1 - b.m0;
        if (rows > kMr && !order.l1_prefetch && !order.rows_sequential) {
          run_block_wide_any(rows, x, padded_k(w.cols), static_cast<const std::uint16_t*>(w.data),
                             b, w.cols, op.y, w.rows);
          return;
        }
        run_block<Bf16StreamTile>(x, padded_k(w.cols), static_cast<const std::uint16_t*>(w.data), b,
                                  w.cols, op.y, w.rows, order);
      } else {
        run_block<Bf16Tile>(x, padded_k(w.cols), static_cast<const std::uint16_t*>(w.data), b,
                            w.cols, op.y, w.rows);
      }
      return;
    }
    case DType::kF32:
      run_block<F32Tile>(op.x, w.cols, static_cast<const float*>(w.data), b, w.cols, op.y, w.rows);
      return;
    case DType::kF16:
      run_block<F16Tile>(op.x, w.cols, static_cast<const std::uint16_t*>(w.data), b, w.cols, op.y,
                         w.rows);
      return;
  }
}

}  // namespace recur::kernels::detail
