// Internal to kernels/: the quantized matmul on AMX-INT8 tiles (tdpbsud), written against a
// tile-ops policy like amx_kernel.h, so the tests run its indexing on a C++ emulation of the
// tiles on any CPU.
//
// Per weight group g, C = A · B on the tiles: A is 16 activation rows x one chunk (<= 64 bytes)
// of the group's int8 codes, one contiguous kilobyte of the prepared activations (tile order,
// below); B is one block's 16 weight rows' codes of that chunk. quant.h's packed layout
// is already B's "4 bytes of each column per row" order (vector k of a group record holds every
// row's codes 4k .. 4k+3), so 8-bit records are loaded in place; a 4-bit record's vector splits
// into two B rows, the low nibbles (codes 8k .. 8k+3) and the high ones (8k+4 .. 8k+7), and an
// MXFP4 record's e2m1 indices become their unsigned affine codes (quant.h kMxfp4AffineCodes) in
// the same pass. C is [16 activation rows][16 weight rows] of int32: each output's exact integer
// dot product of the group, which the epilogue (`fold`) folds into the output with the
// reference's two fused multiply-adds. Integer sums do not depend on how the tiles split them, so
// every output has ref::matmul_quant's bytes, whatever the batch, block or thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"

namespace recur::kernels::detail::amx_quant {
// Internal linkage: compiled with AMX flags in matmul_quant_amx.cc and without them in the tests.
namespace {

constexpr std::int64_t kTile = 16;
// Activation tiles of one pass: the epilogue's accumulators of a 64-row block stay in L1.
constexpr std::int64_t kPassTiles = 4;

// Bytes of K per tile product: a whole group, at most the 64 bytes of a tile row.
constexpr int chunk_bytes(int group) { return group < 64 ? group : 64; }

// The prepared activations of a call past kAmxQuantMinRows rows: quant.h's view over the rows
// padded to a multiple of 16 (q, then d and xsum), with q in tile order: chunk j of the rows of
// tile t is one [16 rows][chunk] A tile, so a tile load reads a contiguous block instead of 16
// rows a whole K apart (which stalled the loads on L2).
inline std::int64_t padded_rows(std::int64_t n_rows) {
  return (n_rows + kTile - 1) / kTile * kTile;
}
inline std::int64_t tile_offset(std::int64_t r, std::int64_t col, std::int64_t cols, int chunk) {
  return ((r / kTile) * (cols / chunk) + col / chunk) * kTile * chunk + (r % kTile) * chunk +
         col % chunk;
}

// Tile registers: C[mt][nt] = mt + 2·nt (0..3), A[mt] = 4 + mt, B[nt] = 6 + nt.
//
// Ops provides:
//   configure(chunk): C tiles 16 x 64 bytes, A tiles 16 x chunk bytes, B tiles chunk/4 x 64;
//   release(); zero<T>(); load<T>(ptr, stride); store<T>(ptr, stride);
//   dot<C, A, B>(): C[m][n] += Σ_k int8(A[m][k]) · uint8(B[k/4][4n + k%4]);
//   unpack4<kCodes>(in, vectors, out): each 64-byte vector v becomes two rows, v & 15 then
//     v >> 4 (kMxfp4: each nibble c as kMxfp4AffineCodes[c]);
//   params<DType>(p, out16): 16 scales or biases as f32 (exact);
//   fold(c, s, b, d, xsum, stride, rows, acc, bias): for rows r < rows and columns n < 16,
//     acc[r][n] = fma(s[n]·d[r·stride], float(c[r][n]), acc[r][n]) and
//     bias[r][n] = fma(b[n], xsum[r·stride], bias[r][n]);
//   finish(acc, bias, y, ldy, rows, cols): y[r][n] = acc[r][n] + bias[r][n].
template <class Ops, int MT, int NT, int kChunk, int kChunks>
void micro(const std::int8_t* const* a, const std::uint8_t* const* b) {
  Ops::template zero<0>();
  if constexpr (MT > 1) Ops::template zero<1>();
  if constexpr (NT > 1) Ops::template zero<2>();
  if constexpr (MT > 1 && NT > 1) Ops::template zero<3>();
  for (int c = 0; c < kChunks; ++c) {
    Ops::template load<4>(a[0] + c * kTile * kChunk, kChunk);
    if constexpr (MT > 1) Ops::template load<5>(a[1] + c * kTile * kChunk, kChunk);
    Ops::template load<6>(b[0] + c * kChunk / 4 * 64, 64);
    if constexpr (NT > 1) Ops::template load<7>(b[1] + c * kChunk / 4 * 64, 64);
    Ops::template dot<0, 4, 6>();
    if constexpr (MT > 1) Ops::template dot<1, 5, 6>();
    if constexpr (NT > 1) Ops::template dot<2, 4, 7>();
    if constexpr (MT > 1 && NT > 1) Ops::template dot<3, 5, 7>();
  }
}

template <class Ops>
void store_c(int reg, std::int32_t* c) {
  if (reg == 0) Ops::template store<0>(c, 64);
  if (reg == 1) Ops::template store<1>(c, 64);
  if (reg == 2) Ops::template store<2>(c, 64);
  if (reg == 3) Ops::template store<3>(c, 64);
}

// Output rows [m0, m1) (m0 a multiple of 16, at most kPassTiles tiles) x the weight rows from n
// (a multiple of 16) to at most n + 32 and n_end.
template <class Ops, int kBits, int kGroup, DType kDType, QuantCodes kCodes>
void pass(const MatmulOperands& op, const QuantizedActivations& a, std::int64_t m0, std::int64_t m1,
          std::int64_t n, std::int64_t n_end) {
  constexpr int kChunk = chunk_bytes(kGroup), kChunks = kGroup / kChunk;
  constexpr std::int64_t kCodeBytes = kTile * kGroup * kBits / 8;
  constexpr std::int64_t kParamBytes = kTile * (kDType == DType::kF32 ? 4 : 2);
  constexpr std::int64_t kRecordBytes = kCodeBytes + 2 * kParamBytes;
  const WeightView& w = op.w;
  const std::int64_t cols = w.cols, groups = cols / kGroup;
  const int n_blocks = n_end - n > kTile ? 2 : 1;
  const int n_tiles = static_cast<int>((m1 - m0 + kTile - 1) / kTile);
  alignas(64) float acc[kPassTiles][2][kTile * kTile];
  alignas(64) float bias[kPassTiles][2][kTile * kTile];
  alignas(64) std::uint8_t unpacked[2][kGroup / 4 * 64];
  // Double-buffered, so that the epilogue of one micro-tile runs while the tiles compute the next.
  alignas(64) std::int32_t c_buf[2][2][2][kTile * kTile];
  alignas(64) float s[2][2][kTile], bb[2][2][kTile];
  for (int t = 0; t < n_tiles; ++t)
    for (int nb = 0; nb < n_blocks; ++nb) {
      std::fill_n(acc[t][nb], kTile * kTile, 0.0f);
      std::fill_n(bias[t][nb], kTile * kTile, 0.0f);
    }
  const std::uint8_t* blocks[2];
  for (int nb = 0; nb < n_blocks; ++nb)
    blocks[nb] = static_cast<const std::uint8_t*>(w.slice_rows(n + nb * kTile, 0).data);
  struct Stored {
    std::int64_t g = -1;
    int t = 0, m_tiles = 0;
  } stored[2];
  // Folds the products stored in buffer `buf`.
  auto fold = [&](int buf) {
    const Stored& st = stored[buf];
    const int p = static_cast<int>(st.g % 2);
    for (int mt = 0; mt < st.m_tiles; ++mt) {
      const std::int64_t r0 = m0 + (st.t + mt) * kTile;
      const int rows = static_cast<int>(std::min(kTile, m1 - r0));
      for (int nb = 0; nb < n_blocks; ++nb) {
        Ops::fold(c_buf[buf][mt][nb], s[p][nb], bb[p][nb], a.d + r0 * groups + st.g,
                  a.xsum + r0 * groups + st.g, groups, rows, acc[st.t + mt][nb],
                  bias[st.t + mt][nb]);
      }
    }
  };
  int buf = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint8_t* bt[2];
    const int p = static_cast<int>(g % 2);
    for (int nb = 0; nb < n_blocks; ++nb) {
      const std::uint8_t* rec = blocks[nb] + g * kRecordBytes;
      if constexpr (kBits == 4) {
        Ops::template unpack4<kCodes>(rec, kGroup / 8, unpacked[nb]);
        bt[nb] = unpacked[nb];
      } else {
        bt[nb] = rec;
      }
      Ops::template params<kDType>(rec + kCodeBytes, s[p][nb]);
      Ops::template params<kDType>(rec + kCodeBytes + kParamBytes, bb[p][nb]);
    }
    for (int t = 0; t < n_tiles; t += 2) {
      const int m_tiles = n_tiles - t >= 2 ? 2 : 1;
      const std::int8_t* at[2];
      for (int mt = 0; mt < m_tiles; ++mt)
        at[mt] = a.q + tile_offset(m0 + (t + mt) * kTile, g * kGroup, cols, kChunk);
      if (m_tiles == 2 && n_blocks == 2) micro<Ops, 2, 2, kChunk, kChunks>(at, bt);
      if (m_tiles == 2 && n_blocks == 1) micro<Ops, 2, 1, kChunk, kChunks>(at, bt);
      if (m_tiles == 1 && n_blocks == 2) micro<Ops, 1, 2, kChunk, kChunks>(at, bt);
      if (m_tiles == 1 && n_blocks == 1) micro<Ops, 1, 1, kChunk, kChunks>(at, bt);
      // The previous micro-tile's epilogue, in program order between this one's products and
      // their stores: the vector units work while the tiles do.
      if (stored[buf ^ 1].g >= 0) fold(buf ^ 1);
      for (int mt = 0; mt < m_tiles; ++mt)
        for (int nb = 0; nb < n_blocks; ++nb) store_c<Ops>(mt + 2 * nb, c_buf[buf][mt][nb]);
      stored[buf] = {.g = g, .t = t, .m_tiles = m_tiles};
      stored[buf ^ 1].g = -1;
      buf ^= 1;
    }
  }
  if (stored[buf ^ 1].g >= 0) fold(buf ^ 1);
  for (int t = 0; t < n_tiles; ++t) {
    const std::int64_t r0 = m0 + t * kTile;
    const int rows = static_cast<int>(std::min(kTile, m1 - r0));
    for (int nb = 0; nb < n_blocks; ++nb) {
      const std::int64_t n0 = n + nb * kTile;
      Ops::finish(acc[t][nb], bias[t][nb], op.y + r0 * w.rows + n0, w.rows, rows,
                  static_cast<int>(std::min(kTile, w.rows - n0)));
    }
  }
}

// A block of the dispatcher: rows [m0, m1) from a multiple of 16, weight rows [n0, n1) from a
// multiple of kQuantBlockRows. op.xp holds the activations in tile order.
template <class Ops, int kBits, int kGroup, DType kDType, QuantCodes kCodes>
void block(const MatmulOperands& op, const MatmulBlock& b) {
  static_assert(kTile == kQuantBlockRows);
  const QuantizedActivations a =
      quantized_rows_view(const_cast<void*>(op.xp), padded_rows(op.n_rows), op.w.cols, kGroup);
  Ops::configure(chunk_bytes(kGroup));
  for (std::int64_t n = b.n0; n < b.n1; n += 2 * kTile) {
    for (std::int64_t m = b.m0; m < b.m1; m += kPassTiles * kTile) {
      pass<Ops, kBits, kGroup, kDType, kCodes>(op, a, m, std::min(b.m1, m + kPassTiles * kTile), n,
                                               b.n1);
    }
  }
  Ops::release();
}

}  // namespace
}  // namespace recur::kernels::detail::amx_quant
