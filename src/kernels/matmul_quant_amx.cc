// The quantized matmul on AMX-INT8: amx_quant_kernel.h on real tile registers (compiled with
// -mamx-tile -mamx-int8 and the AVX-512 flags; only run when isa_supported(kAmx)), the epilogue
// in AVX-512. Calls of up to kAmxQuantMinRows rows (decode) run the AVX-512 VNNI block instead:
// one activation row fills a sixteenth of a tile, and both give ref::matmul_quant's bytes.
#include <immintrin.h>

#include <cstring>

#include "kernels/amx_quant_kernel.h"
#include "kernels/amx_tiles.h"
#include "kernels/quant_pick.h"

namespace recur::kernels::detail {
namespace {

struct Int8TileOps : TileMoves {
  static void configure(int chunk) {
    TileConfig cfg;
    for (int t = 0; t < 4; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;  // C
    for (int t = 4; t < 6; ++t) cfg.colsb[t] = static_cast<std::uint16_t>(chunk), cfg.rows[t] = 16;
    for (int t = 6; t < 8; ++t)
      cfg.colsb[t] = 64, cfg.rows[t] = static_cast<std::uint8_t>(chunk / 4);
    _tile_loadconfig(&cfg);
  }
  static void release() { _tile_release(); }
  // The products amx_quant_kernel.h issues: C[mt][nt] = mt + 2·nt from A = 4 + mt, B = 6 + nt.
  template <int C, int A, int B>
  static void dot() {
    if constexpr (C == 0 && A == 4 && B == 6)
      _tile_dpbsud(0, 4, 6);
    else if constexpr (C == 1 && A == 5 && B == 6)
      _tile_dpbsud(1, 5, 6);
    else if constexpr (C == 2 && A == 4 && B == 7)
      _tile_dpbsud(2, 4, 7);
    else if constexpr (C == 3 && A == 5 && B == 7)
      _tile_dpbsud(3, 5, 7);
    else
      static_assert(C < 0, "a tile product amx_quant_kernel.h does not issue");
  }
  template <QuantCodes kCodes>
  static void unpack4(const std::uint8_t* in, int vectors, std::uint8_t* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i mx_codes = _mm512_broadcast_i32x4(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4AffineCodes)));
    for (int k = 0; k < vectors; ++k) {
      const __m512i v = _mm512_loadu_si512(in + 64 * k);
      __m512i lo = _mm512_and_si512(v, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      if constexpr (kCodes == QuantCodes::kMxfp4) {
        lo = _mm512_shuffle_epi8(mx_codes, lo);
        hi = _mm512_shuffle_epi8(mx_codes, hi);
      }
      _mm512_store_si512(out + 128 * k, lo);
      _mm512_store_si512(out + 128 * k + 64, hi);
    }
  }
  template <DType kDType>
  static void params(const std::uint8_t* p, float* out) {
    __m512 v;
    if constexpr (kDType == DType::kBF16) {
      v = _mm512_castsi512_ps(_mm512_slli_epi32(
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    } else if constexpr (kDType == DType::kF16) {
      v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      v = _mm512_loadu_ps(p);
    }
    _mm512_store_ps(out, v);
  }
  static void fold(const std::int32_t* c, const float* s, const float* b, const float* d,
                   const float* xsum, std::int64_t stride, int rows, float* acc, float* bias) {
    const __m512 sv = _mm512_load_ps(s), bv = _mm512_load_ps(b);
    for (int r = 0; r < rows; ++r) {
      const __m512 sd = _mm512_mul_ps(sv, _mm512_set1_ps(d[r * stride]));
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r));
      _mm512_store_ps(acc + 16 * r, _mm512_fmadd_ps(sd, dot, _mm512_load_ps(acc + 16 * r)));
      _mm512_store_ps(bias + 16 * r, _mm512_fmadd_ps(bv, _mm512_set1_ps(xsum[r * stride]),
                                                     _mm512_load_ps(bias + 16 * r)));
    }
  }
  static void finish(const float* acc, const float* bias, float* y, std::int64_t ldy, int rows,
                     int cols) {
    const __mmask16 mask = _cvtu32_mask16((1u << cols) - 1u);
    for (int r = 0; r < rows; ++r) {
      _mm512_mask_storeu_ps(
          y + r * ldy, mask,
          _mm512_add_ps(_mm512_load_ps(acc + 16 * r), _mm512_load_ps(bias + 16 * r)));
    }
  }
};

struct AmxQuant {
  template <int kBits, int kGroup, DType kDType, QuantCodes kCodes>
  static void block(const MatmulOperands& op, const MatmulBlock& b) {
    amx_quant::block<Int8TileOps, kBits, kGroup, kDType, kCodes>(op, b);
  }
};

}  // namespace

std::int64_t amx_quant_x_bytes(const ActivationRows& a) {
  if (a.n_rows <= kAmxQuantMinRows) return quantized_x_bytes(a);
  return quantized_rows_bytes(amx_quant::padded_rows(a.n_rows), a.k_dim, a.group_size);
}

// quantize_x_rows_avx512's integers, d and xsum, with the codes in tile order (rows past n_rows
// zero).
void amx_quantize_x_rows(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  if (a.n_rows <= kAmxQuantMinRows) {
    quantize_x_rows_avx512(a, r0, r1, out);
    return;
  }
  const std::int64_t cols = a.k_dim, groups = cols / a.group_size;
  const int chunk = amx_quant::chunk_bytes(a.group_size);
  const QuantizedActivations all =
      quantized_rows_view(out, amx_quant::padded_rows(a.n_rows), cols, a.group_size);
  if (r1 - r0 < amx_quant::kTile) {
    std::memset(all.q + r0 * cols, 0, static_cast<std::size_t>(amx_quant::kTile * cols));
  }
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t at = r * groups + g;
      quantize_group_avx512(a.row(r) + g * a.group_size, a.group_size, chunk,
                            amx_quant::kTile * chunk,
                            all.q + amx_quant::tile_offset(r, g * a.group_size, cols, chunk),
                            all.d + at, all.xsum + at);
    }
  }
}

void matmul_block_quant_amx(const MatmulOperands& op, const MatmulBlock& b) {
  if (op.n_rows <= kAmxQuantMinRows) {
    matmul_block_quant_avx512(op, b);
    return;
  }
  run_quant_block<AmxQuant>(op, b);
}

}  // namespace recur::kernels::detail
