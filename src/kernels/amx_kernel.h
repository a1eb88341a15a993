// Internal to kernels/: the AMX-BF16 matmul block written against a tile-ops policy, so the same
// indexing runs on real tiles (matmul_amx.cc) and on a plain C++ emulation of the tile
// instructions in the tests (this CPU may lack AMX; the layout must still be proven right).
//
// yᵀ = W · xᵀ: A tiles are 16 weight rows x 32 K read in place from W (row-major, stride K*2
// bytes); B tiles are x packed "VNNI" (op.xp): for each block of 16 activation rows, K/2 pair-rows
// of [16 rows x 2 bf16] (64 bytes); C tiles are [16 weight rows x 16 activation rows] f32. Every C
// element accumulates over K blocks in order, whatever the tile grid: batch invariant.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/dtype.h"
#include "kernels/matmul_isa.h"

namespace recur::kernels::detail::amx {
// Internal linkage: matmul_amx.cc compiles this header with AMX and AVX-512 flags, dispatch.cc
// without; shared inline copies would let the linker hand the AMX-flagged one to every caller.
namespace {

constexpr std::int64_t kTileRows = 16;
constexpr std::int64_t kTileK = 32;  // bf16 per A-tile row (64 bytes)

inline std::int64_t padded_k(std::int64_t k_dim) { return (k_dim + kTileK - 1) / kTileK * kTileK; }
inline std::int64_t padded_m(std::int64_t n_rows) {
  return (n_rows + kTileRows - 1) / kTileRows * kTileRows;
}

// Element index of x[m][k] in the packed layout (K and M zero-padded).
inline std::int64_t vnni_index(std::int64_t m, std::int64_t k, std::int64_t kp) {
  const std::int64_t mb = m / kTileRows, mi = m % kTileRows;
  return ((mb * (kp / 2) + k / 2) * kTileRows + mi) * 2 + (k % 2);
}

// Packs activation rows [16·mb, 16·mb + 16) into their block of the layout (zero-padded).
inline void pack_x_block(const float* x, std::int64_t n_rows, std::int64_t k_dim, std::int64_t mb,
                         std::uint16_t* out) {
  const std::int64_t kp = padded_k(k_dim);
  if (kp == 0) return;  // K = 0: nothing to pack (and out may be null)
  std::uint16_t* block = out + mb * kTileRows * kp;
  std::memset(block, 0, static_cast<std::size_t>(kTileRows * kp) * 2);
  const std::int64_t m_end = std::min(n_rows, (mb + 1) * kTileRows);
  for (std::int64_t m = mb * kTileRows; m < m_end; ++m)
    for (std::int64_t k = 0; k < k_dim; ++k)
      out[vnni_index(m, k, kp)] = f32_to_bf16(x[m * k_dim + k]);
}

// y[mi][ni] = c[ni][mi] for the valid part of a stored C tile (c: [16 weight rows][16 activation
// rows], y: activation rows of ldy floats): the plain loop, for tile emulations.
inline void store_transposed_scalar(const float* c, float* y, std::int64_t ldy, int n_valid,
                                    int m_valid) {
  for (int mi = 0; mi < m_valid; ++mi)
    for (int ni = 0; ni < n_valid; ++ni) y[mi * ldy + ni] = c[ni * kTileRows + mi];
}

// Tile registers: C0..C3 = 0..3 (C[nt][mt] = 2*nt + mt), A0, A1 = 4, 5, B0, B1 = 6, 7.
// Ops provides zero<T>(), load<T>(ptr, stride_bytes), dot<C, A, B>(), store<T>(ptr, stride) and
// store_transposed(c, y, ldy, n_valid, m_valid) (store_transposed_scalar's result).
template <class Ops, int NT, int MT>
void micro(const MatmulOperands& op, std::int64_t n, std::int64_t m, std::int64_t n_end,
           std::int64_t m_end) {
  const WeightView& w = op.w;
  const std::int64_t k_dim = w.cols, kp = padded_k(k_dim);
  const auto* wd = static_cast<const std::uint16_t*>(w.data);
  alignas(64) std::uint16_t pad[NT][kTileRows * kTileK];
  alignas(64) float c_buf[kTileRows * kTileRows];
  Ops::template zero<0>();
  if constexpr (MT > 1) Ops::template zero<1>();
  if constexpr (NT > 1) Ops::template zero<2>();
  if constexpr (NT > 1 && MT > 1) Ops::template zero<3>();
  for (std::int64_t k = 0; k < kp; k += kTileK) {
    for (int nt = 0; nt < NT; ++nt) {
      const std::int64_t n0 = n + nt * kTileRows;
      const std::int64_t rows = std::min(kTileRows, n_end - n0);
      const std::int64_t cols = std::min(kTileK, k_dim - k);
      const std::uint16_t* a = wd + n0 * k_dim + k;
      std::int64_t stride = k_dim * 2;
      if (rows < kTileRows || cols < kTileK) {  // edge: zero-padded copy of the valid part
        std::memset(pad[nt], 0, sizeof(pad[nt]));
        for (std::int64_t r = 0; r < rows; ++r)
          std::memcpy(pad[nt] + r * kTileK, a + r * k_dim, static_cast<std::size_t>(cols) * 2);
        a = pad[nt];
        stride = kTileK * 2;
      }
      if (nt == 0) Ops::template load<4>(a, stride);
      if (nt == 1) Ops::template load<5>(a, stride);
    }
    const std::uint16_t* b = static_cast<const std::uint16_t*>(op.xp) +
                             (m / kTileRows * (kp / 2) + k / 2) * kTileRows * 2;
    Ops::template load<6>(b, kTileRows * 4);
    if constexpr (MT > 1) Ops::template load<7>(b + kp / 2 * kTileRows * 2, kTileRows * 4);
    Ops::template dot<0, 4, 6>();
    if constexpr (MT > 1) Ops::template dot<1, 4, 7>();
    if constexpr (NT > 1) Ops::template dot<2, 5, 6>();
    if constexpr (NT > 1 && MT > 1) Ops::template dot<3, 5, 7>();
  }
  for (int t = 0; t < NT * MT; ++t) {
    const int nt = t / MT, mt = t % MT;
    const int reg = 2 * nt + mt;
    if (reg == 0) Ops::template store<0>(c_buf, kTileRows * 4);
    if (reg == 1) Ops::template store<1>(c_buf, kTileRows * 4);
    if (reg == 2) Ops::template store<2>(c_buf, kTileRows * 4);
    if (reg == 3) Ops::template store<3>(c_buf, kTileRows * 4);
    const std::int64_t n0 = n + nt * kTileRows, m0 = m + mt * kTileRows;
    Ops::store_transposed(c_buf, op.y + m0 * w.rows + n0, w.rows,
                          static_cast<int>(std::min(kTileRows, n_end - n0)),
                          static_cast<int>(std::min(kTileRows, m_end - m0)));
  }
}

// One 16-weight-row tile against three 16-row activation tiles (33-48 rows: a follow-up turn's
// prompt, an expert's tokens): each weight tile is loaded once, where a 2 x 2 then a 2 x 1
// micro-tile over the same weight rows load it twice. Registers: C0..C2 = 0..2, A = 4,
// B0..B2 = 5..7. Same per-element K order as micro: same bytes.
template <class Ops>
void micro_1x3(const MatmulOperands& op, std::int64_t n, std::int64_t m, std::int64_t n_end,
               std::int64_t m_end) {
  const WeightView& w = op.w;
  const std::int64_t k_dim = w.cols, kp = padded_k(k_dim);
  const auto* wd = static_cast<const std::uint16_t*>(w.data);
  alignas(64) std::uint16_t pad[kTileRows * kTileK];
  alignas(64) float c_buf[kTileRows * kTileRows];
  const std::int64_t rows = std::min(kTileRows, n_end - n);
  Ops::template zero<0>();
  Ops::template zero<1>();
  Ops::template zero<2>();
  const std::int64_t b_tile = kp / 2 * kTileRows * 2;  // elements per packed 16-row block
  const std::uint16_t* xb = static_cast<const std::uint16_t*>(op.xp) + m / kTileRows * b_tile;
  for (std::int64_t k = 0; k < kp; k += kTileK) {
    const std::int64_t cols = std::min(kTileK, k_dim - k);
    const std::uint16_t* a = wd + n * k_dim + k;
    std::int64_t stride = k_dim * 2;
    if (rows < kTileRows || cols < kTileK) {
      std::memset(pad, 0, sizeof(pad));
      for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(pad + r * kTileK, a + r * k_dim, static_cast<std::size_t>(cols) * 2);
      a = pad;
      stride = kTileK * 2;
    }
    Ops::template load<4>(a, stride);
    const std::uint16_t* b = xb + k / 2 * kTileRows * 2;
    Ops::template load<5>(b, kTileRows * 4);
    Ops::template load<6>(b + b_tile, kTileRows * 4);
    Ops::template load<7>(b + 2 * b_tile, kTileRows * 4);
    Ops::template dot<0, 4, 5>();
    Ops::template dot<1, 4, 6>();
    Ops::template dot<2, 4, 7>();
  }
  for (int mt = 0; mt < 3; ++mt) {
    if (mt == 0) Ops::template store<0>(c_buf, kTileRows * 4);
    if (mt == 1) Ops::template store<1>(c_buf, kTileRows * 4);
    if (mt == 2) Ops::template store<2>(c_buf, kTileRows * 4);
    const std::int64_t m0 = m + mt * kTileRows;
    Ops::store_transposed(c_buf, op.y + m0 * w.rows + n, w.rows, static_cast<int>(rows),
                          static_cast<int>(std::min(kTileRows, m_end - m0)));
  }
}

// Blocks start at multiples of 16 rows (m0) so B tiles line up with the packed x.
template <class Ops>
void block(const MatmulOperands& op, const MatmulBlock& b) {
  constexpr std::int64_t kStep = 2 * kTileRows;
  if (b.m1 - b.m0 > 2 * kTileRows && b.m1 - b.m0 <= 3 * kTileRows) {
    for (std::int64_t n = b.n0; n < b.n1; n += kTileRows) micro_1x3<Ops>(op, n, b.m0, b.n1, b.m1);
    return;
  }
  for (std::int64_t n = b.n0; n < b.n1; n += kStep) {
    const bool two_n = b.n1 - n > kTileRows;
    for (std::int64_t m = b.m0; m < b.m1; m += kStep) {
      const bool two_m = b.m1 - m > kTileRows;
      if (two_n && two_m) micro<Ops, 2, 2>(op, n, m, b.n1, b.m1);
      if (two_n && !two_m) micro<Ops, 2, 1>(op, n, m, b.n1, b.m1);
      if (!two_n && two_m) micro<Ops, 1, 2>(op, n, m, b.n1, b.m1);
      if (!two_n && !two_m) micro<Ops, 1, 1>(op, n, m, b.n1, b.m1);
    }
  }
}

}  // namespace
}  // namespace recur::kernels::detail::amx
