// The quantized matmul on AVX-VNNI (matmul_quant_avx2.h): vpdpbusd in 256-bit form sums four
// u8 x s8 products into each 32-bit lane without saturating, so an 8-bit code needs no nibble
// split and a 4-bit one two instructions where AVX2 needs five. The same exact integers, so the
// same bytes as AVX2, AVX-512 and the reference. Intel's client CPUs since Alder Lake have it
// without AVX-512; AMD's since Zen 5.
// Compiled with the AVX2 + FMA + F16C + AVX-VNNI flags; reached only through the avx2-vnni table.
#include "kernels/matmul_quant_avx2.h"
#include "kernels/quant_pick.h"

namespace recur::kernels::detail {
namespace {

struct VnniDot {
  static __m256i codes8(__m256i dot, __m256i v, __m256i, __m256i, __m256i xb) {
    return _mm256_dpbusd_avx_epi32(dot, v, xb);
  }
  static __m256i codes4(__m256i dot, __m256i lo, __m256i hi, __m256i xlo, __m256i xhi) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(dot, lo, xlo), hi, xhi);
  }
};

struct VnniQuant {
  template <int kBits, int kGroup, DType kDType, QuantCodes kCodes>
  static void block(const MatmulOperands& op, const MatmulBlock& b) {
    quant_block<VnniDot, kBits, kGroup, kDType, kCodes>(op, b);
  }
};

}  // namespace

void matmul_block_quant_avxvnni(const MatmulOperands& op, const MatmulBlock& b) {
  run_quant_block<VnniQuant>(op, b);
}

}  // namespace recur::kernels::detail
