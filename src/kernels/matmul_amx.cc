// AMX-BF16 matmul blocks: amx_kernel.h on real tile registers (compiled with -mamx-tile
// -mamx-bf16; only run when isa_supported(kAmx), which also obtained the tile permission).
#include <immintrin.h>

#include "kernels/amx_kernel.h"

namespace recur::kernels::detail {
namespace {

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Eight 16x64-byte tiles; set per task because tile configuration is per thread.
void configure_tiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

// GCC's tile intrinsics paste the register number into the assembly text, so each register is
// spelled out as a literal.
#define RECUR_TILE_SWITCH(T, OP) \
  if constexpr (T == 0)          \
    OP(0);                       \
  else if constexpr (T == 1)     \
    OP(1);                       \
  else if constexpr (T == 2)     \
    OP(2);                       \
  else if constexpr (T == 3)     \
    OP(3);                       \
  else if constexpr (T == 4)     \
    OP(4);                       \
  else if constexpr (T == 5)     \
    OP(5);                       \
  else if constexpr (T == 6)     \
    OP(6);                       \
  else                           \
    OP(7)

struct TileOps {
  template <int T>
  static void zero() {
#define RECUR_OP(t) _tile_zero(t)
    RECUR_TILE_SWITCH(T, RECUR_OP);
#undef RECUR_OP
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
#define RECUR_OP(t) _tile_loadd(t, p, stride)
    RECUR_TILE_SWITCH(T, RECUR_OP);
#undef RECUR_OP
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
#define RECUR_OP(t) _tile_stored(t, p, stride)
    RECUR_TILE_SWITCH(T, RECUR_OP);
#undef RECUR_OP
  }
  // The C tile is [weight rows][activation rows]; y wants activation rows: a 16 x 16 transpose in
  // registers (scalar stores of the 1,024 elements of a 2 x 2 micro-tile took about as long as
  // its K loop at K 1024).
  static void store_transposed(const float* c, float* y, std::int64_t ldy, int n_valid,
                               int m_valid) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(c + i * 16);
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
      const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
      const __m512d c2 = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
      r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c2));
      r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c2));
      r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
      r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // r[4q + j] holds, in each 128-bit lane L, rows 4q..4q+3 of column 4L + j.
    for (int j = 0; j < 4; ++j) {
      t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
      t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
      t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
      t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    }
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
      r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
      r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
      r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
    }
    const __mmask16 mask = _cvtu32_mask16((1u << n_valid) - 1u);
    for (int mi = 0; mi < m_valid; ++mi) _mm512_mask_storeu_ps(y + mi * ldy, mask, r[mi]);
  }
  // The four products amx_kernel.h issues: C0 = A0 B0, C1 = A0 B1, C2 = A1 B0, C3 = A1 B1.
  template <int C, int A, int B>
  static void dot() {
    static_assert(A == 4 + C / 2 && B == 6 + C % 2);
    if constexpr (C == 0)
      _tile_dpbf16ps(0, 4, 6);
    else if constexpr (C == 1)
      _tile_dpbf16ps(1, 4, 7);
    else if constexpr (C == 2)
      _tile_dpbf16ps(2, 5, 6);
    else
      _tile_dpbf16ps(3, 5, 7);
  }
};

#undef RECUR_TILE_SWITCH

}  // namespace

std::int64_t amx_x_bytes(const ActivationRows& a) {
  return amx::padded_m(a.n_rows) * amx::padded_k(a.k_dim) * 2;
}

// Rows [r0, r0 + 16): the 16-row block r0 / 16 of the packed layout.
void amx_pack_x(const ActivationRows& a, std::int64_t r0, std::int64_t, void* out) {
  static_assert(kPrepRows == amx::kTileRows);
  amx::pack_x_block(a.x, a.n_rows, a.k_dim, r0 / amx::kTileRows, static_cast<std::uint16_t*>(out));
}

void matmul_block_amx(const MatmulOperands& op, const MatmulBlock& b) {
  configure_tiles();
  amx::block<TileOps>(op, b);
  _tile_release();
}

}  // namespace recur::kernels::detail
