// Internal to kernels/: what the files running real AMX tiles share (matmul_amx.cc,
// matmul_quant_amx.cc, peak_amx.cc): the tile configuration record and the tile register moves.
// Included only by files compiled with AMX flags; internal linkage, so no weak symbol crosses ISAs.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace recur::kernels::detail {
namespace {

// ldtilecfg's 64-byte record (palette 1): each tile's rows and bytes per row.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

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

// Zero, load and store of tile register T: the moves every tile-ops policy has.
struct TileMoves {
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
};

#undef RECUR_TILE_SWITCH

}  // namespace
}  // namespace recur::kernels::detail
