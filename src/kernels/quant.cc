// MLX affine quantization, dequantization, activation quantization and the scalar quantized
// matmul (the reference every ISA's quantized kernel is checked against). Compiled without FMA
// contraction, like reference.cc, so its rounding is the plain one on every CPU.
#include "kernels/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/check.h"

namespace recur::kernels {
namespace {

void store_as(DType dtype, void* base, std::int64_t i, float v) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(base)[i] = v;
      return;
    case DType::kBF16:
      static_cast<std::uint16_t*>(base)[i] = f32_to_bf16(v);
      return;
    case DType::kF16:
      static_cast<std::uint16_t*>(base)[i] = f32_to_f16(v);
      return;
  }
}

}  // namespace

bool quant_format_supported(int bits, int group_size) {
  return (bits == 4 || bits == 8) && (group_size == 32 || group_size == 64 || group_size == 128);
}

void quantize_rows(const float* w, std::int64_t rows, std::int64_t cols, int bits, int group_size,
                   DType scale_dtype, std::uint32_t* codes, void* scales, void* biases) {
  RECUR_CHECK(quant_format_supported(bits, group_size) && cols % group_size == 0);
  const float n_bins = static_cast<float>((1 << bits) - 1);
  const float eps = 1e-7f;
  const std::int64_t words = cols * bits / 32;
  const std::int64_t groups = cols / group_size;
  std::memset(codes, 0, static_cast<std::size_t>(rows * words) * sizeof(std::uint32_t));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* wr = w + r * cols;
    std::uint32_t* cr = codes + r * words;
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* wg = wr + g * group_size;
      float lo = wg[0], hi = wg[0];
      for (int i = 1; i < group_size; ++i) {
        lo = std::min(lo, wg[i]);
        hi = std::max(hi, wg[i]);
      }
      // The edge of larger magnitude becomes an exact code (q = 0 at that edge): the scale is
      // negative when it is the maximum.
      const bool low_edge = std::fabs(lo) > std::fabs(hi);
      float scale = std::max((hi - lo) / n_bins, eps);
      if (!low_edge) scale = -scale;
      const float edge = low_edge ? lo : hi;
      const float q0 = std::rint(edge / scale);
      float bias = 0.0f;
      if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
      }
      for (int i = 0; i < group_size; ++i) {
        const float q = std::clamp(std::rint((wg[i] - bias) / scale), 0.0f, n_bins);
        const std::int64_t bit = (g * group_size + i) * bits;
        cr[bit / 32] |= static_cast<std::uint32_t>(q) << (bit % 32);
      }
      store_as(scale_dtype, scales, r * groups + g, scale);
      store_as(scale_dtype, biases, r * groups + g, bias);
    }
  }
}

void dequantize_row(const WeightView& w, std::int64_t r, float* out) {
  RECUR_CHECK(w.quantized() && r >= 0 && r < w.rows);
  const WeightView row = w.slice_rows(r, 1);
  const auto* codes = static_cast<const std::uint32_t*>(row.data);
  for (std::int64_t g = 0; g < w.groups(); ++g) {
    const float s = load_as_f32(row.scales, w.dtype, g);
    const float b = load_as_f32(row.biases, w.dtype, g);
    for (std::int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
      out[i] = s * static_cast<float>(quant_code(codes, w.bits, i)) + b;
    }
  }
}

void quantize_activation_row(const float* x, std::int64_t cols, int group_size,
                             const QuantizedActivations& out) {
  for (std::int64_t g = 0; g < cols / group_size; ++g) {
    const float* xg = x + g * group_size;
    std::int8_t* qg = out.q + g * group_size;
    float amax = 0.0f;
    for (int i = 0; i < group_size; ++i) amax = std::max(amax, std::fabs(xg[i]));
    if (amax == 0.0f) {
      std::fill(qg, qg + group_size, std::int8_t{0});
      out.d[g] = 0.0f;
      out.xsum[g] = 0.0f;
      continue;
    }
    const float inv = 127.0f / amax;
    std::int32_t sum = 0;
    for (int i = 0; i < group_size; ++i) {
      qg[i] = static_cast<std::int8_t>(std::nearbyint(xg[i] * inv));
      sum += qg[i];
    }
    out.d[g] = amax / 127.0f;
    out.xsum[g] = out.d[g] * static_cast<float>(sum);
  }
}

namespace ref {

void matmul_quant(const QuantizedActivations& a, std::int64_t n_rows, const WeightView& w, float* y,
                  std::int64_t ldy) {
  RECUR_CHECK(w.quantized());
  const std::int64_t groups = w.groups();
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int8_t* xq = a.q + r * w.cols;
    const float* d = a.d + r * groups;
    const float* xsum = a.xsum + r * groups;
    for (std::int64_t n = 0; n < w.rows; ++n) {
      const WeightView row = w.slice_rows(n, 1);
      const auto* codes = static_cast<const std::uint32_t*>(row.data);
      float acc = 0.0f;
      for (std::int64_t g = 0; g < groups; ++g) {
        std::int32_t dot = 0;
        for (std::int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
          dot += static_cast<std::int32_t>(quant_code(codes, w.bits, i)) * xq[i];
        }
        acc += (load_as_f32(row.scales, w.dtype, g) * d[g]) * static_cast<float>(dot);
      }
      float bias = 0.0f;
      for (std::int64_t g = 0; g < groups; ++g) {
        bias += load_as_f32(row.biases, w.dtype, g) * xsum[g];
      }
      y[r * ldy + n] = acc + bias;
    }
  }
}

}  // namespace ref
}  // namespace recur::kernels
