// Register-only tdpbf16ps and tdpbsud loops on four independent C tiles (A, B fixed in tmm4..7).
#include <immintrin.h>

#include <cstdint>

#include "kernels/amx_tiles.h"
#include "kernels/peak_loops.h"

namespace recur::kernels::detail {

namespace {

void configure_and_fill() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) static const std::uint16_t kZeros[16 * 32] = {};
  _tile_loadd(4, kZeros, 64);
  _tile_loadd(5, kZeros, 64);
  _tile_loadd(6, kZeros, 64);
  _tile_loadd(7, kZeros, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

void drain() {
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  __asm__ volatile("" : : "r"(out[0]) : "memory");
}

}  // namespace

double peak_loop_amx_bf16(std::int64_t iterations) {
  configure_and_fill();
  for (std::int64_t it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  drain();
  return static_cast<double>(iterations) * 4 * 16 * 16 * 32 * 2;  // 16x16 C, 32 bf16 K, mul+add
}

double peak_loop_amx_int8(std::int64_t iterations) {
  configure_and_fill();
  for (std::int64_t it = 0; it < iterations; ++it) {
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  drain();
  return static_cast<double>(iterations) * 4 * 16 * 16 * 64 * 2;  // 16x16 C, 64 bytes K, mul+add
}

}  // namespace recur::kernels::detail
