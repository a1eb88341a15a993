// The quantized matmul on AVX-512 VNNI over quant.h's packed layout: a 64-byte vector holds 4
// codes (8 bits) or 8 codes (4 bits) of each of a block's 16 weight rows, so `vpdpbusd` against 4
// broadcast activation bytes advances 16 rows' integer dot products at once, and a group ends
// with the reference's two fused multiply-adds per lane. Integer sums do not depend on the order
// of their terms and each lane's f32 operations are the reference's in its order, so the bytes
// equal ref::matmul_quant's for every shape, batch and split.
// Compiled with AVX-512 VNNI flags; reached only through the AVX-512 KernelTables.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "kernels/quant_pick.h"

namespace recur::kernels::detail {
namespace {

// Activation rows computed together against one block: they share each loaded code vector. Decode
// steps of 5-8 sequences take all their rows in one tile, so each block's codes are loaded and
// unpacked once: 5-8 rows on the Zen 5 VM, kernels_bench 3584 x 1024 from memory, q8 1.28-1.43x
// and q4 1.08-1.24x against passes of 4 and the rest. Larger calls keep 4 rows: an 8-row tile's 24
// accumulators leave GCC too few registers, and 128-512-row calls ran 0.75-0.87x with it.
constexpr int kTileRows = 4;

inline __m512 load_group_params(const std::uint8_t* p, DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return _mm512_castsi512_ps(_mm512_slli_epi32(
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    case DType::kF16:
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    case DType::kF32:
      break;
  }
  return _mm512_loadu_ps(p);
}

inline __m512i broadcast4(const std::int8_t* p) {
  std::int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows [r0, r0 + kRows) of the activations against kBlocks consecutive 16-row blocks of
// weights (`block`, the next `block_bytes` further on), y's columns 16 per block; `mask` says
// which rows of the last block exist. Each broadcast activation word feeds one `vpdpbusd` per
// block: the broadcasts, not the products, bound the one-block tile on Zen 5 (a register-only
// tile of it runs 1.3x faster without them), and two blocks per tile halve them. A tile with few
// products per group keeps several independent integer chains (vpdpbusd's latency would
// otherwise bound it); they are summed exactly at the group end. The bias sums run in a second
// pass over the groups, in the reference's order, so the first pass holds only the dot products
// and the scaled sums in registers. `next` (or null): blocks whose records to prefetch, group by
// group, as these are walked. MXFP4 codes (kCodes) are e2m1 indices: one vpshufb per nibble vector
// turns them into their unsigned affine codes (quant.h kMxfp4AffineCodes), the rest is the same.
template <int kBits, int kGroup, DType kDType, QuantCodes kCodes, int kRows, int kBlocks>
void block_tile(const QuantizedActivations& a, std::int64_t r0, const std::uint8_t* block,
                std::int64_t block_bytes, std::int64_t cols, float* y, std::int64_t ldy,
                __mmask16 mask, const std::uint8_t* next) {
  constexpr int kChains = kRows * kBlocks >= 4 ? 1 : 4 / (kRows * kBlocks);
  constexpr std::int64_t kCodeBytes = kQuantBlockRows * kGroup * kBits / 8;
  constexpr std::int64_t kParamBytes = kQuantBlockRows * (kDType == DType::kF32 ? 4 : 2);
  constexpr std::int64_t kRecordBytes = kCodeBytes + 2 * kParamBytes;
  const std::int64_t groups = cols / kGroup;
  __m512 acc[kRows][kBlocks], bias[kRows][kBlocks];
  for (int r = 0; r < kRows; ++r) {
    for (int j = 0; j < kBlocks; ++j) acc[r][j] = bias[r][j] = _mm512_setzero_ps();
  }
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i mx_codes =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4AffineCodes)));
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint8_t* rec[kBlocks];
    for (int j = 0; j < kBlocks; ++j) rec[j] = block + j * block_bytes + g * kRecordBytes;
    if (next != nullptr) {
      for (int j = 0; j < kBlocks; ++j) {
        const auto* p = reinterpret_cast<const char*>(next + j * block_bytes + g * kRecordBytes);
        for (std::int64_t off = 0; off < kRecordBytes; off += 64) {
          _mm_prefetch(p + off, _MM_HINT_T0);
        }
      }
    }
    const std::int8_t* x[kRows];
    for (int r = 0; r < kRows; ++r) x[r] = a.q + (r0 + r) * cols + g * kGroup;
    __m512i dot[kRows][kBlocks][kChains];
    for (int r = 0; r < kRows; ++r) {
      for (int j = 0; j < kBlocks; ++j) {
        for (int c = 0; c < kChains; ++c) dot[r][j][c] = _mm512_setzero_si512();
      }
    }
    if constexpr (kBits == 8) {
      for (int k = 0; k < kGroup / 4; ++k) {
        __m512i w[kBlocks];
        for (int j = 0; j < kBlocks; ++j) w[j] = _mm512_loadu_si512(rec[j] + 64 * k);
        for (int r = 0; r < kRows; ++r) {
          const __m512i xb = broadcast4(x[r] + 4 * k);
          for (int j = 0; j < kBlocks; ++j) {
            __m512i& d = dot[r][j][k % kChains];
            d = _mm512_dpbusd_epi32(d, w[j], xb);
          }
        }
      }
    } else {
      for (int k = 0; k < kGroup / 8; ++k) {
        __m512i lo[kBlocks], hi[kBlocks];
        for (int j = 0; j < kBlocks; ++j) {
          const __m512i v = _mm512_loadu_si512(rec[j] + 64 * k);
          lo[j] = _mm512_and_si512(v, low4);
          hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
          if constexpr (kCodes == QuantCodes::kMxfp4) {
            lo[j] = _mm512_shuffle_epi8(mx_codes, lo[j]);
            hi[j] = _mm512_shuffle_epi8(mx_codes, hi[j]);
          }
        }
        for (int r = 0; r < kRows; ++r) {
          const __m512i xb = broadcast4(x[r] + 8 * k);
          for (int j = 0; j < kBlocks; ++j) {
            __m512i& d = dot[r][j][(2 * k) % kChains];
            d = _mm512_dpbusd_epi32(d, lo[j], xb);
          }
        }
        for (int r = 0; r < kRows; ++r) {
          const __m512i xb = broadcast4(x[r] + 8 * k + 4);
          for (int j = 0; j < kBlocks; ++j) {
            __m512i& d = dot[r][j][(2 * k + 1) % kChains];
            d = _mm512_dpbusd_epi32(d, hi[j], xb);
          }
        }
      }
    }
    __m512 scale[kBlocks];
    for (int j = 0; j < kBlocks; ++j) scale[j] = load_group_params(rec[j] + kCodeBytes, kDType);
    for (int r = 0; r < kRows; ++r) {
      const __m512 d = _mm512_set1_ps(a.d[(r0 + r) * groups + g]);
      for (int j = 0; j < kBlocks; ++j) {
        __m512i sum = dot[r][j][0];
        for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, dot[r][j][c]);
        acc[r][j] = _mm512_fmadd_ps(_mm512_mul_ps(scale[j], d), _mm512_cvtepi32_ps(sum), acc[r][j]);
      }
    }
    if constexpr (kBlocks == 1) {
      const __m512 b = load_group_params(rec[0] + kCodeBytes + kParamBytes, kDType);
      for (int r = 0; r < kRows; ++r) {
        const __m512 xs = _mm512_set1_ps(a.xsum[(r0 + r) * groups + g]);
        bias[r][0] = _mm512_fmadd_ps(b, xs, bias[r][0]);
      }
    }
  }
  for (std::int64_t g = 0; kBlocks > 1 && g < groups; ++g) {
    __m512 b[kBlocks];
    for (int j = 0; j < kBlocks; ++j) {
      b[j] = load_group_params(
          block + j * block_bytes + g * kRecordBytes + kCodeBytes + kParamBytes, kDType);
    }
    for (int r = 0; r < kRows; ++r) {
      const __m512 xs = _mm512_set1_ps(a.xsum[(r0 + r) * groups + g]);
      for (int j = 0; j < kBlocks; ++j) bias[r][j] = _mm512_fmadd_ps(b[j], xs, bias[r][j]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int j = 0; j < kBlocks; ++j) {
      _mm512_mask_storeu_ps(y + (r0 + r) * ldy + 16 * j, j + 1 == kBlocks ? mask : 0xFFFF,
                            _mm512_add_ps(acc[r][j], bias[r][j]));
    }
  }
}

// block_tile for 1 to sizeof...(I) rows over kBlocks blocks, indexed by rows - 1.
template <int kBits, int kGroup, DType kDType, QuantCodes kCodes, int kBlocks, int... I>
constexpr auto make_tiles(std::integer_sequence<int, I...>) {
  return std::array{&block_tile<kBits, kGroup, kDType, kCodes, I + 1, kBlocks>...};
}

template <int kBits, int kGroup, DType kDType, QuantCodes kCodes>
void quant_block(const MatmulOperands& op, const MatmulBlock& b) {
  static constexpr auto kTiles =
      make_tiles<kBits, kGroup, kDType, kCodes, 1>(std::make_integer_sequence<int, kStreamRows>{});
  static constexpr auto kPairTiles =
      make_tiles<kBits, kGroup, kDType, kCodes, 2>(std::make_integer_sequence<int, kTileRows>{});
  const WeightView& w = op.w;
  const QuantizedActivations a =
      quantized_rows_view(const_cast<void*>(op.xp), op.n_rows, w.cols, kGroup);
  const std::int64_t block_bytes = w.block_bytes();
  // A decode step's rows all in one tile over one block; larger calls kTileRows rows at a time,
  // then the rest, over two blocks.
  const bool stream = op.n_rows <= kStreamRows;
  const std::int64_t step = stream ? b.m1 - b.m0 : kTileRows;
  // Two blocks per tile for 4-bit calls past 2 rows: 8-bit tiles over two blocks ran 0.7-0.9x at
  // 16-512 rows (kernels_bench). A 3-4-row decode tile over one block is bound by its broadcasts
  // and its compute did not overlap the stream; over two, with the next pair prefetched (below),
  // kernels_bench 151936 x 2048 q4 4 rows ran 818-906 against 551-774 GOP/s (Zen 5 VM).
  const bool pairs = kBits == 4 && (!stream || (step >= 3 && step <= kTileRows));
  const std::int64_t span = pairs ? 2 * kQuantBlockRows : kQuantBlockRows;
  if (!stream && b.m0 == 0 && b.n0 < b.n1) {
    // The task's first blocks have no tile before them to request them: all their lines at once
    // (moe_bench q4 expert stages 1.03-1.05x more). Tasks of later row blocks find them in cache.
    const auto* p = static_cast<const char*>(w.slice_rows(b.n0, 0).data);
    const std::int64_t n_blocks =
        (std::min(b.n1, b.n0 + span) - b.n0 + kQuantBlockRows - 1) / kQuantBlockRows;
    for (std::int64_t off = 0; off < n_blocks * block_bytes; off += 64) {
      _mm_prefetch(p + off, _MM_HINT_T0);
    }
  }
  for (std::int64_t n = b.n0; n < b.n1; n += span) {
    const auto* block = static_cast<const std::uint8_t*>(w.slice_rows(n, 0).data);
    // A lone block at the end of the range runs the one-block tiles.
    const bool pair = pairs && n + kQuantBlockRows < b.n1;
    const std::int64_t last = pair ? n + kQuantBlockRows : n;
    const std::int64_t lanes = std::min<std::int64_t>(kQuantBlockRows, w.rows - last);
    const auto mask = static_cast<__mmask16>((1u << lanes) - 1u);
    float* y = op.y + n;
    // A tile's first row tile requests the next blocks' records as it walks its own: in prefill
    // the hardware prefetchers see no stream to follow while the other row tiles re-read them
    // from L1 (Zen 5 VM: MoE expert stages 1.06-1.12x, 16-128-row calls 1.07-1.26x, 512 rows
    // alike); in decode of 2-8 rows the compute and the stream do not overlap without it
    // (kernels_bench 151936 x 2048 q4 8 rows 38-40% -> 52-53% of the int8 peak, q8 4 rows
    // 1.15-1.3x). A decode task's range is one chunk of the thread's contiguous run
    // (run_parts_streaming), so the request runs on past its end: stopping there left every
    // chunk's first blocks unrequested (4-row q4 pairs 0.7x). One row leaves the stream to the
    // hardware, which follows it (q8 0.85-1.0x with the request). A ranged prefill task's last
    // blocks request its successor's first ones (b.next: the next task of the thread's range,
    // usually, in this weight or the next expert's), which would otherwise start on a cold pair:
    // moe_bench Qwen3-Next experts q4 from memory, 10 rows, 1.07-1.32x (Zen 5 VM).
    const std::uint8_t* next =
        (!stream || step > 1) && n + span < (stream ? w.rows : b.n1)
            ? static_cast<const std::uint8_t*>(w.slice_rows(n + span, 0).data)
        : !stream ? static_cast<const std::uint8_t*>(b.next)
                  : nullptr;
    const auto* const tiles = pair ? kPairTiles.data() : kTiles.data();
    std::int64_t r = b.m0;
    for (; r + step <= b.m1; r += step) {
      tiles[static_cast<std::size_t>(step - 1)](a, r, block, block_bytes, w.cols, y, w.rows, mask,
                                                r == b.m0 ? next : nullptr);
    }
    if (r < b.m1) {
      tiles[static_cast<std::size_t>(b.m1 - r - 1)](a, r, block, block_bytes, w.cols, y, w.rows,
                                                    mask, r == b.m0 ? next : nullptr);
    }
  }
}

// The block functions of every format, for run_quant_block (quant_pick.h).
struct Avx512Quant {
  template <int kBits, int kGroup, DType kDType, QuantCodes kCodes>
  static void block(const MatmulOperands& op, const MatmulBlock& b) {
    quant_block<kBits, kGroup, kDType, kCodes>(op, b);
  }
};

}  // namespace

// quantize_activation_row's arithmetic 16 inputs at a time: the absolute maximum (exact in any
// order), x · (127 / absmax) rounded to nearest even by vcvtps2dq (the default rounding mode, as
// nearbyint), the integer sum; the scalar d and xsum are the reference's operations.
void quantize_group_avx512(const float* x, int n, int chunk, std::int64_t chunk_stride,
                           std::int8_t* q, float* d, float* xsum) {
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512 m = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + i), sign));
  const float amax = _mm512_reduce_max_ps(m);
  const __m512 inv = _mm512_set1_ps(amax == 0.0f ? 0.0f : 127.0f / amax);
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < n; i += 16) {
    const __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
    sum = _mm512_add_epi32(sum, qi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i / chunk * chunk_stride + i % chunk),
                     _mm512_cvtepi32_epi8(qi));
  }
  *d = amax == 0.0f ? 0.0f : amax / 127.0f;
  *xsum = amax == 0.0f ? 0.0f : *d * static_cast<float>(_mm512_reduce_add_epi32(sum));
}

void quantize_x_rows_avx512(const ActivationRows& a, std::int64_t r0, std::int64_t r1, void* out) {
  const QuantizedActivations all = quantized_rows_view(out, a.n_rows, a.k_dim, a.group_size);
  const std::int64_t groups = a.k_dim / a.group_size;
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t at = r * groups + g;
      quantize_group_avx512(a.row(r) + g * a.group_size, a.group_size, a.group_size, 0,
                            all.q + r * a.k_dim + g * a.group_size, all.d + at, all.xsum + at);
    }
  }
}

void matmul_block_quant_avx512(const MatmulOperands& op, const MatmulBlock& b) {
  run_quant_block<Avx512Quant>(op, b);
}

}  // namespace recur::kernels::detail
