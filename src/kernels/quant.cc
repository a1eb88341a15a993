// MLX affine quantization, dequantization, activation quantization and the scalar quantized
// matmul (the reference every ISA's quantized kernel is checked against). Compiled without FMA
// contraction, like reference.cc, so its rounding is the plain one on every CPU.
#include "kernels/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

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

void dequantize_row(const MlxQuantized& m, std::int64_t r, float* out) {
  RECUR_CHECK(r >= 0 && r < m.rows);
  const std::int64_t groups = m.cols / m.group_size;
  const std::uint32_t* codes = m.codes + r * (m.cols * m.bits / 32);
  for (std::int64_t g = 0; g < groups; ++g) {
    const float s = load_as_f32(m.scales, m.dtype, r * groups + g);
    const float b = load_as_f32(m.biases, m.dtype, r * groups + g);
    for (std::int64_t i = g * m.group_size; i < (g + 1) * m.group_size; ++i) {
      out[i] = s * static_cast<float>(quant_code(codes, m.bits, i)) + b;
    }
  }
}

WeightView packed_view(const MlxQuantized& m, const void* data) {
  RECUR_CHECK(quant_format_supported(m.bits, m.group_size) && m.cols % m.group_size == 0);
  return {.data = data,
          .dtype = m.dtype,
          .rows = m.rows,
          .cols = m.cols,
          .bits = m.bits,
          .group_size = m.group_size};
}

namespace {

// Where row r's byte of input e lives in its group record, and (4 bits) which nibble.
struct CodeSlot {
  std::int64_t byte;
  int shift;
};
CodeSlot code_slot(int bits, std::int64_t lane, std::int64_t i) {
  if (bits == 8) return {(i / 4) * 64 + lane * 4 + i % 4, 0};
  const std::int64_t j = i % 8;
  return {(i / 8) * 64 + lane * 4 + j % 4, j < 4 ? 0 : 4};
}

std::uint8_t* record_of(const WeightView& w, std::int64_t r, std::int64_t g) {
  auto* base = static_cast<std::uint8_t*>(const_cast<void*>(w.data));
  return base + r / kQuantBlockRows * w.block_bytes() + g * w.group_record_bytes();
}

std::int64_t codes_bytes(const WeightView& w) {
  return kQuantBlockRows * w.group_size * w.bits / 8;
}

// One 32-bit lane word of a code vector from the MLX word holding the same inputs. 8 bits: the
// same four bytes. 4 bits: MLX's word holds inputs 8k .. 8k+7 as nibbles 0 .. 7 (little-endian);
// the lane word wants input 8k+j in the low nibble of byte j and 8k+4+j in its high nibble, i.e.
// nibbles in the order 0 4 1 5 2 6 3 7: swap the middle bytes, then the middle nibbles of each
// half.
inline std::uint32_t lane_word(std::uint32_t x, int bits) {
  if (bits == 8) return x;
  std::uint32_t t = (x ^ (x >> 8)) & 0x0000FF00u;
  x ^= t ^ (t << 8);
  t = (x ^ (x >> 4)) & 0x00F000F0u;
  return x ^ t ^ (t << 4);
}

}  // namespace

// Word by word rather than input by input: a model's load repacks every quantized weight, and the
// per-input form ran at about 0.4 GB/s (40 s for a 17 GB checkpoint).
void pack_quantized_rows(const MlxQuantized& m, std::int64_t r0, std::int64_t n,
                         const WeightView& out) {
  RECUR_CHECK(r0 % kQuantBlockRows == 0 && r0 + n <= out.rows && m.bits == out.bits &&
              m.group_size == out.group_size && m.cols == out.cols && m.dtype == out.dtype);
  const std::int64_t groups = out.groups(), words = m.cols * m.bits / 32;
  const std::int64_t group_words = m.group_size * m.bits / 32;  // one lane's words per record
  const std::int64_t sbytes = dtype_bytes(m.dtype);
  const std::int64_t code_bytes = codes_bytes(out), record_bytes = out.group_record_bytes();
  // Whole blocks: a partial last block's missing rows become zeros.
  const std::int64_t end =
      std::min(out.rows, r0 + n) == out.rows
          ? (out.rows + kQuantBlockRows - 1) / kQuantBlockRows * kQuantBlockRows
          : r0 + n;
  const auto* scales = static_cast<const std::uint8_t*>(m.scales);
  const auto* biases = static_cast<const std::uint8_t*>(m.biases);
  for (std::int64_t r = r0; r < end; ++r) {
    const bool real = r < r0 + n;
    const std::uint32_t* src = m.codes + (r - r0) * words;
    const std::int64_t lane = r % kQuantBlockRows;
    std::uint8_t* rec = record_of(out, r, 0);
    for (std::int64_t g = 0; g < groups; ++g, rec += record_bytes) {
      for (std::int64_t k = 0; k < group_words; ++k) {
        const std::uint32_t word = real ? lane_word(src[g * group_words + k], m.bits) : 0u;
        std::memcpy(rec + k * 64 + lane * 4, &word, 4);
      }
      std::uint8_t* scale = rec + code_bytes + lane * sbytes;
      std::uint8_t* bias = scale + kQuantBlockRows * sbytes;
      const std::int64_t at = ((r - r0) * groups + g) * sbytes;
      if (real) {
        std::memcpy(scale, scales + at, static_cast<std::size_t>(sbytes));
        std::memcpy(bias, biases + at, static_cast<std::size_t>(sbytes));
      } else {
        std::memset(scale, 0, static_cast<std::size_t>(sbytes));
        std::memset(bias, 0, static_cast<std::size_t>(sbytes));
      }
    }
  }
}

float mxfp4_value(std::uint8_t code, std::uint8_t scale) {
  RECUR_CHECK(code < 16);
  if (scale == 255) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(kE2m1Values[code], static_cast<int>(scale) - 127);
}

WeightView mxfp4_packed_view(std::int64_t rows, std::int64_t cols, const void* data) {
  RECUR_CHECK(rows >= 0 && cols >= 0 && cols % 32 == 0);
  return {.data = data,
          .dtype = DType::kBF16,
          .rows = rows,
          .cols = cols,
          .bits = 4,
          .group_size = 32,
          .codes = QuantCodes::kMxfp4};
}

namespace {

// The bf16 scale 2^(e − 128) and bias −12·2^(e − 128) of every e8m0 byte (exact: a power of two
// and 1.5 times one; e = 0 and 1 give subnormal scales; the bias of 253 and up overflows to −inf).
struct Mxfp4Params {
  std::uint16_t scale[256], bias[256];
};
const Mxfp4Params& mxfp4_params() {
  static const Mxfp4Params params = [] {
    Mxfp4Params p{};
    for (int e = 0; e < 256; ++e) {
      const float s = std::ldexp(1.0f, e - 128);
      p.scale[e] = f32_to_bf16(s);
      p.bias[e] = f32_to_bf16(-12.0f * s);
    }
    return p;
  }();
  return params;
}

}  // namespace

// As pack_quantized_rows: an MXFP4 block's 4 bytes 4k .. 4k+3 hold inputs 8k .. 8k+7 as nibbles
// 0 .. 7 of their little-endian word (byte i: input 2i low, 2i + 1 high), MLX's 4-bit word order,
// so lane_word places them. The nibbles stay e2m1 indices; the kernels remap them.
bool pack_mxfp4_rows(const Mxfp4Matrix& m, std::int64_t r0, std::int64_t n, const WeightView& out) {
  constexpr std::int64_t kGroup = 32, kBlockBytes = kGroup / 2;
  RECUR_CHECK(out.codes == QuantCodes::kMxfp4 && out.bits == 4 && out.group_size == kGroup &&
              out.dtype == DType::kBF16 && m.cols == out.cols && m.rows == out.rows && n >= 0 &&
              r0 % kQuantBlockRows == 0 && r0 + n <= out.rows);
  const std::int64_t groups = out.groups();
  if (n > 0 && std::memchr(m.scales, 255, static_cast<std::size_t>(n * groups)) != nullptr) {
    return false;
  }
  const Mxfp4Params& params = mxfp4_params();
  const std::int64_t code_bytes = codes_bytes(out), record_bytes = out.group_record_bytes();
  const std::int64_t end =
      std::min(out.rows, r0 + n) == out.rows
          ? (out.rows + kQuantBlockRows - 1) / kQuantBlockRows * kQuantBlockRows
          : r0 + n;
  for (std::int64_t r = r0; r < end; ++r) {
    const bool real = r < r0 + n;
    const std::int64_t lane = r % kQuantBlockRows;
    std::uint8_t* rec = record_of(out, r, 0);
    for (std::int64_t g = 0; g < groups; ++g, rec += record_bytes) {
      std::uint16_t scale = 0, bias = 0;
      if (real) {
        const std::uint8_t* block = m.blocks + ((r - r0) * groups + g) * kBlockBytes;
        for (std::int64_t k = 0; k < kBlockBytes / 4; ++k) {
          std::uint32_t word;
          std::memcpy(&word, block + 4 * k, 4);
          word = lane_word(word, 4);
          std::memcpy(rec + k * 64 + lane * 4, &word, 4);
        }
        const std::uint8_t e = m.scales[(r - r0) * groups + g];
        scale = params.scale[e];
        bias = params.bias[e];
      } else {
        for (std::int64_t k = 0; k < kBlockBytes / 4; ++k)
          std::memset(rec + k * 64 + lane * 4, 0, 4);
      }
      std::memcpy(rec + code_bytes + lane * 2, &scale, 2);
      std::memcpy(rec + code_bytes + (kQuantBlockRows + lane) * 2, &bias, 2);
    }
  }
  return true;
}

std::uint32_t packed_code(const WeightView& w, std::int64_t r, std::int64_t e) {
  const CodeSlot slot = code_slot(w.bits, r % kQuantBlockRows, e % w.group_size);
  const std::uint32_t c =
      (record_of(w, r, e / w.group_size)[slot.byte] >> slot.shift) & ((1u << w.bits) - 1u);
  return w.codes == QuantCodes::kMxfp4 ? kMxfp4AffineCodes[c] : c;
}

float packed_scale(const WeightView& w, std::int64_t r, std::int64_t g) {
  return load_as_f32(record_of(w, r, g) + codes_bytes(w), w.dtype, r % kQuantBlockRows);
}

float packed_bias(const WeightView& w, std::int64_t r, std::int64_t g) {
  return load_as_f32(record_of(w, r, g) + codes_bytes(w) + kQuantBlockRows * dtype_bytes(w.dtype),
                     w.dtype, r % kQuantBlockRows);
}

namespace {

// s·(q − 12): e2m1[c]·2^(e − 127) in one rounding (exact, or the overflow the value itself has),
// where s·q + b would overflow from e = 252 on. Elsewhere both are the same floats.
void dequantize_mxfp4_row(const WeightView& w, std::int64_t r, float* out) {
  RECUR_CHECK(w.bits == 4);
  float value[16];
  for (int c = 0; c < 16; ++c) value[c] = static_cast<float>(kMxfp4AffineCodes[c] - 12);
  const std::int64_t lane = r % kQuantBlockRows, words = w.group_size / 8;
  for (std::int64_t g = 0; g < w.groups(); ++g) {
    const float s = packed_scale(w, r, g);
    const std::uint8_t* rec = record_of(w, r, g);
    float* o = out + g * w.group_size;
    for (std::int64_t k = 0; k < words; ++k, o += 8) {
      const std::uint8_t* word = rec + k * 64 + lane * 4;
      for (int j = 0; j < 4; ++j) {
        o[j] = s * value[word[j] & 15u];
        o[4 + j] = s * value[word[j] >> 4];
      }
    }
  }
}

}  // namespace

// Lane word by lane word (pack_quantized_rows' layout): the input-by-input form cost 7 ns an
// element, a tenth of a quantized model's 512-token prefill going to its embedding rows.
void dequantize_row(const WeightView& w, std::int64_t r, float* out) {
  RECUR_CHECK(w.quantized() && r >= 0 && r < w.rows);
  if (w.codes == QuantCodes::kMxfp4) {
    dequantize_mxfp4_row(w, r, out);
    return;
  }
  const std::int64_t lane = r % kQuantBlockRows, per_word = 32 / w.bits;
  const std::int64_t words = w.group_size / per_word;
  for (std::int64_t g = 0; g < w.groups(); ++g) {
    const float s = packed_scale(w, r, g);
    const float b = packed_bias(w, r, g);
    const std::uint8_t* rec = record_of(w, r, g);
    float* o = out + g * w.group_size;
    for (std::int64_t k = 0; k < words; ++k, o += per_word) {
      const std::uint8_t* word = rec + k * 64 + lane * 4;
      for (int j = 0; j < 4; ++j) {
        if (w.bits == 8) {
          o[j] = s * static_cast<float>(word[j]) + b;
        } else {  // byte j: input 8k+j in its low nibble, 8k+4+j in its high one
          o[j] = s * static_cast<float>(word[j] & 15u) + b;
          o[4 + j] = s * static_cast<float>(word[j] >> 4) + b;
        }
      }
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

std::int64_t quantized_rows_bytes(std::int64_t n_rows, std::int64_t cols, int group_size) {
  const std::int64_t q = (n_rows * cols + 63) / 64 * 64;
  return q + 2 * n_rows * (cols / group_size) * static_cast<std::int64_t>(sizeof(float));
}

QuantizedActivations quantized_rows_view(void* base, std::int64_t n_rows, std::int64_t cols,
                                         int group_size) {
  auto* p = static_cast<std::uint8_t*>(base);
  const std::int64_t q = (n_rows * cols + 63) / 64 * 64;
  auto* d = reinterpret_cast<float*>(p + q);
  return {.q = reinterpret_cast<std::int8_t*>(p), .d = d, .xsum = d + n_rows * (cols / group_size)};
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
      float acc = 0.0f, bias = 0.0f;
      for (std::int64_t g = 0; g < groups; ++g) {
        std::int32_t dot = 0;
        for (std::int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
          dot += static_cast<std::int32_t>(packed_code(w, n, i)) * xq[i];
        }
        acc = std::fma(packed_scale(w, n, g) * d[g], static_cast<float>(dot), acc);
        bias = std::fma(packed_bias(w, n, g), xsum[g], bias);
      }
      y[r * ldy + n] = acc + bias;
    }
  }
}

}  // namespace ref
}  // namespace recur::kernels
