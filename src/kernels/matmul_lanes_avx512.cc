// AVX-512 BF16 matmul for large batches (prefill), with the exact bytes of matmul_avx512.cc's
// tiles.
//
// There an output element is one accumulator whose 16 lanes l walk K (lane l takes the bf16 pair
// 2l, 2l+1 of every 32-wide chunk c, in order of c), reduced by a fixed tree (hsum). Each lane's
// partial sum depends only on its own chain of vdpbf16ps, so any loop that runs the same chains
// and adds the 16 partials in the same tree gives the same bytes. Here a vector's lanes are 16
// activation rows instead: the activations are packed per call as [row group][l][c][16 rows][2]
// (pack_x_lanes_avx512) and every weight pair is broadcast straight from the mapped checkpoint,
// so the weights are never repacked. A micro-tile is 64 rows x 6 weight rows: 24 accumulators, 4
// vector loads and 6 broadcasts per 24 vdpbf16ps (fewer rows: more weight rows, tile_cols), run
// once per lane l; the 16 partials of an output then meet in the hsum tree as 15 vertical adds
// per 16 outputs instead of 16 horizontal sums (the 4x4 tiles' cost: loads 8 per 16 vdpbf16ps
// and a horizontal sum per output).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/matmul_isa.h"
#include "kernels/pack_avx512.h"

namespace recur::kernels::detail {
namespace {

constexpr int kLanes = 16;
constexpr int kGroups = 4;    // 16-row groups per micro-tile
constexpr int kMaxCols = 12;  // weight rows (output columns) per micro-tile, at most

// A micro-tile's weight rows for `groups` row groups and reduction length k_dim. Up to 24
// accumulators (12 for one group) keep both vdpbf16ps pipes fed past the instruction's latency:
// with 6 columns a 32-row tile has 12, and qwen3-30b-a3b's expert down stage (16-47 rows per
// expert) ran at 41% of the peak on the Zen 5 VM. But every lane pass reads the tile's weight
// rows again, so they must fit lanes_weight_l1_bytes (matmul_isa.h): 12 columns up to K 1024
// (Qwen3.5's projections, an expert's down), 8 up to K 2048 on a 48 KiB L1 (an expert's gate and
// up). 6, 8 and 12 divide kLanesBlockN: no part-empty tiles.
int tile_cols(int groups, std::int64_t k_dim) {
  constexpr int kByGroups[kGroups] = {12, 12, 8, 6};
  const std::int64_t fit = lanes_weight_l1_bytes() / (2 * std::max<std::int64_t>(1, k_dim));
  return std::min(kByGroups[groups - 1], fit >= 12 ? 12 : fit >= 8 ? 8 : 6);
}

// The lanes in the order hsum's tree combines them: its first adds pair lane l with l + 8, then
// (l, l + 8) with (l + 4, l + 12), then those with the ones 2 apart, then the odd with the even
// half. Processing lanes in this order lets each finished pair merge at once (a binary counter),
// so at most 4 partial results per output wait in memory.
constexpr std::array<int, kLanes> kLaneOrder = {0, 8, 4, 12, 2, 10, 6, 14,
                                                1, 9, 5, 13, 3, 11, 7, 15};

std::uint32_t load_pair(const std::uint16_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Weight pair l of chunk c of one row, zero past k_dim (as matmul_avx512.cc's masked tail load).
std::uint32_t tail_pair(const std::uint16_t* row, std::int64_t k_dim, std::int64_t k) {
  if (k >= k_dim) return 0;
  if (k + 1 >= k_dim) return row[k];
  return load_pair(row + k);
}

// Merges lane partial `s` (in kLaneOrder) of every accumulator into the binary counter `held`
// with the operand order of hsum (later first at the two lower levels, earlier first above), and
// returns true with the finished sums in acc after the last lane.
template <int G, int NC>
bool merge_lane(int s, __m512 (&acc)[G][NC], __m512 (*held)[G][NC]) {
  int level = 0;
  for (int bit = s; (bit & 1) != 0; bit >>= 1, ++level) {
    for (int g = 0; g < G; ++g)
      for (int n = 0; n < NC; ++n)
        acc[g][n] = level < 2 ? _mm512_add_ps(acc[g][n], held[level][g][n])
                              : _mm512_add_ps(held[level][g][n], acc[g][n]);
  }
  if (level == 4) return true;
  for (int g = 0; g < G; ++g)
    for (int n = 0; n < NC; ++n) held[level][g][n] = acc[g][n];
  return false;
}

// Rows [m, m + rows) (rows <= 16 G) x weight rows [0, NC) of w. xp: this tile's first row group
// in the packed layout, chunk stride per lane `chunks`.
template <int G, int NC>
void lanes_tile(const std::uint16_t* xp, std::int64_t chunks, const std::uint16_t* w,
                std::int64_t ldw, std::int64_t k_dim, std::int64_t rows, float* y, std::int64_t ldy,
                const std::uint16_t* next) {
  const std::int64_t full = k_dim / 32;
  alignas(64) __m512 held[4][G][NC];
  __m512 acc[G][NC];
  for (int s = 0; s < kLanes; ++s) {
    const int l = kLaneOrder[static_cast<std::size_t>(s)];
    for (int g = 0; g < G; ++g)
      for (int n = 0; n < NC; ++n) acc[g][n] = _mm512_setzero_ps();
    const std::uint16_t* xl = xp + l * chunks * G * 32;
    const std::uint16_t* wl = w + 2 * l;
    // The next tile's weight rows, one per lane pass, a line per chunk: its first pass would
    // otherwise wait on memory for every line (a matrix larger than the caches, like lm_head).
    const char* ahead =
        next != nullptr && s < NC ? reinterpret_cast<const char*>(next + s * ldw) : nullptr;
    for (std::int64_t c = 0; c < full; ++c) {
      if (ahead != nullptr) _mm_prefetch(ahead + c * 64, _MM_HINT_T0);
      __m512i xv[G];
      for (int g = 0; g < G; ++g) xv[g] = _mm512_loadu_si512(xl + (c * G + g) * 32);
      for (int n = 0; n < NC; ++n) {
        const __m512i wb = _mm512_set1_epi32(static_cast<int>(load_pair(wl + n * ldw + c * 32)));
        for (int g = 0; g < G; ++g)
          acc[g][n] = _mm512_dpbf16_ps(acc[g][n], (__m512bh)xv[g], (__m512bh)wb);
      }
    }
    if (full < chunks) {
      __m512i xv[G];
      for (int g = 0; g < G; ++g) xv[g] = _mm512_loadu_si512(xl + (full * G + g) * 32);
      for (int n = 0; n < NC; ++n) {
        const std::uint32_t pair = tail_pair(w + n * ldw, k_dim, full * 32 + 2 * l);
        const __m512i wb = _mm512_set1_epi32(static_cast<int>(pair));
        for (int g = 0; g < G; ++g)
          acc[g][n] = _mm512_dpbf16_ps(acc[g][n], (__m512bh)xv[g], (__m512bh)wb);
      }
    }
    if (merge_lane<G, NC>(s, acc, held)) break;
  }
  alignas(64) float out[NC][kLanes];
  for (int g = 0; g < G; ++g) {
    for (int n = 0; n < NC; ++n) _mm512_store_ps(out[n], acc[g][n]);
    const std::int64_t rg = std::min<std::int64_t>(kLanes, rows - g * kLanes);
    for (std::int64_t i = 0; i < rg; ++i)
      for (int n = 0; n < NC; ++n) y[(g * kLanes + i) * ldy + n] = out[n][i];
  }
}

template <int I>
constexpr auto tile_entry() {
  return &lanes_tile<I / kMaxCols + 1, I % kMaxCols + 1>;
}
template <int... I>
constexpr auto make_table(std::integer_sequence<int, I...>) {
  return std::array{tile_entry<I>()...};
}
constexpr auto kTiles = make_table(std::make_integer_sequence<int, kGroups * kMaxCols>{});

}  // namespace

std::int64_t lanes_x_bytes_avx512(const ActivationRows& a) {
  return (a.n_rows + kLanes - 1) / kLanes * kLanes * ((a.k_dim + 31) / 32 * 32) * 2;
}

// Rows [r0, r0 + 16): the 16-row group mg.
void pack_x_lanes_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t, void* xp) {
  static_assert(kPrepRows == kLanes);
  const std::int64_t mg = r0 / kLanes;
  const std::int64_t chunks = (a.k_dim + 31) / 32;
  // The groups of one micro-tile's 64 rows interleave per (lane, chunk): one ascending stream.
  const std::int64_t block = mg / kGroups, g = mg % kGroups;
  const std::int64_t groups =
      std::min<std::int64_t>(kGroups, (a.n_rows + kLanes - 1) / kLanes - block * kGroups);
  std::uint16_t* out =
      static_cast<std::uint16_t*>(xp) + block * kGroups * kLanes * chunks * 32 + g * 32;
  const int valid = static_cast<int>(std::min<std::int64_t>(kLanes, a.n_rows - r0));
  for (std::int64_t c = 0; c < chunks; ++c) {
    __m512i r[16];
    pair_columns(a.x + r0 * a.k_dim + c * 32, a.k_dim, valid, a.k_dim - c * 32, r);
    for (int l = 0; l < kLanes; ++l)
      _mm512_storeu_si512(out + (l * chunks + c) * groups * 32, r[l]);
  }
}

void matmul_block_lanes_avx512(const MatmulOperands& op, const MatmulBlock& b) {
  const auto* w = static_cast<const std::uint16_t*>(op.w.data);
  const std::int64_t k_dim = op.w.cols, chunks = (k_dim + 31) / 32, ldy = op.w.rows;
  const std::int64_t group_elems = kLanes * chunks * 32;
  for (std::int64_t m = b.m0; m < b.m1; m += kGroups * kLanes) {
    const std::int64_t rows = std::min<std::int64_t>(kGroups * kLanes, b.m1 - m);
    const int groups = static_cast<int>((rows + kLanes - 1) / kLanes);
    const int nc = tile_cols(groups, k_dim);
    for (std::int64_t n = b.n0; n < b.n1; n += nc) {
      const int cols = static_cast<int>(std::min<std::int64_t>(nc, b.n1 - n));
      const std::int64_t n_next = n + nc < b.n1 ? n + nc : b.n0;  // then the next rows
      const std::uint16_t* next =
          n_next + nc <= op.w.rows && (n + nc < b.n1 || m + kGroups * kLanes < b.m1)
              ? w + n_next * k_dim
              : nullptr;
      kTiles[static_cast<std::size_t>((groups - 1) * kMaxCols + cols - 1)](
          static_cast<const std::uint16_t*>(op.xp) + m / kLanes * group_elems, chunks,
          w + n * k_dim, k_dim, k_dim, rows, op.y + m * ldy + n, ldy, next);
    }
  }
}

}  // namespace recur::kernels::detail
