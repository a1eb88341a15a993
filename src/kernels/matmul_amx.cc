// AMX-BF16 matmul blocks: amx_kernel.h on real tile registers (compiled with -mamx-tile
// -mamx-bf16; only run when isa_supported(kAmx), which also obtained the tile permission).
#include <immintrin.h>

#include <algorithm>

#include "kernels/amx_kernel.h"
#include "kernels/amx_tiles.h"
#include "kernels/pack_avx512.h"

namespace recur::kernels::detail {
namespace {

// Eight 16x64-byte tiles; set per task because tile configuration is per thread.
void configure_tiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

struct TileOps : TileMoves {
  // The C tile is [weight rows][activation rows]; y wants activation rows: a 16 x 16 transpose in
  // registers (scalar stores of the 1,024 elements of a 2 x 2 micro-tile took about as long as
  // its K loop at K 1024).
  static void store_transposed(const float* c, float* y, std::int64_t ldy, int n_valid,
                               int m_valid) {
    __m512i r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(c + i * 16);
    transpose16(r);
    const __mmask16 mask = _cvtu32_mask16((1u << n_valid) - 1u);
    for (int mi = 0; mi < m_valid; ++mi) {
      _mm512_mask_storeu_ps(y + mi * ldy, mask, _mm512_castsi512_ps(r[mi]));
    }
  }
  // The products amx_kernel.h issues: micro's C0 = A0 B0, C1 = A0 B1, C2 = A1 B0, C3 = A1 B1
  // (A0, A1 = 4, 5; B0, B1 = 6, 7) and micro_1x3's C0..C2 = A B0..B2 (A = 4; B = 5, 6, 7).
  template <int C, int A, int B>
  static void dot() {
    if constexpr (C == 0 && A == 4 && B == 6)
      _tile_dpbf16ps(0, 4, 6);
    else if constexpr (C == 1 && A == 4 && B == 7)
      _tile_dpbf16ps(1, 4, 7);
    else if constexpr (C == 2 && A == 5 && B == 6)
      _tile_dpbf16ps(2, 5, 6);
    else if constexpr (C == 3 && A == 5 && B == 7)
      _tile_dpbf16ps(3, 5, 7);
    else if constexpr (C == 0 && A == 4 && B == 5)
      _tile_dpbf16ps(0, 4, 5);
    else if constexpr (C == 1 && A == 4 && B == 6)
      _tile_dpbf16ps(1, 4, 6);
    else if constexpr (C == 2 && A == 4 && B == 7)
      _tile_dpbf16ps(2, 4, 7);
    else
      static_assert(C < 0, "a tile product amx_kernel.h does not issue");
  }
};

}  // namespace

std::int64_t amx_x_bytes(const ActivationRows& a) {
  return amx::padded_m(a.n_rows) * amx::padded_k(a.k_dim) * 2;
}

// Rows [r0, r0 + 16): the 16-row block r0 / 16 of the packed layout, amx::pack_x_block's bytes:
// each 32-wide chunk of K of the 16 rows rounded to bf16 pairs, transposed so that a pair's 16
// rows are one 64-byte row of the B tile (the plain loop was a tenth of a 512-row prefill's
// matmul time).
void amx_pack_x(const ActivationRows& a, std::int64_t r0, std::int64_t, void* out) {
  static_assert(kPrepRows == amx::kTileRows);
  const std::int64_t kp = amx::padded_k(a.k_dim), chunks = kp / amx::kTileK;
  auto* block = static_cast<std::uint16_t*>(out) + r0 * kp;
  const int valid = static_cast<int>(std::min<std::int64_t>(amx::kTileRows, a.n_rows - r0));
  for (std::int64_t c = 0; c < chunks; ++c) {
    __m512i r[16];
    pair_columns(a.x + r0 * a.k_dim + c * amx::kTileK, a.k_dim, valid, a.k_dim - c * amx::kTileK,
                 r);
    for (int j = 0; j < 16; ++j) _mm512_storeu_si512(block + (c * 16 + j) * 32, r[j]);
  }
}

void matmul_block_amx(const MatmulOperands& op, const MatmulBlock& b) {
  configure_tiles();
  amx::block<TileOps>(op, b);
  _tile_release();
}

}  // namespace recur::kernels::detail
