// Element types of checkpoint tensors and the non-owning view of a weight matrix the kernels read
// in place (memory-mapped, never copied). Conversions are the exact IEEE ones (round to nearest
// even).
#pragma once

#include <cstdint>
#include <cstring>

namespace recur::kernels {

enum class DType : std::uint8_t { kF32, kBF16, kF16 };

constexpr std::int64_t dtype_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }
const char* dtype_name(DType t);

// A row-major matrix [rows, cols] = [out features, in features] as HF stores Linear weights.
// Row r starts at data + r * cols * dtype_bytes(dtype). Non-owning.
struct WeightView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::int64_t rows = 0;  // N, output features
  std::int64_t cols = 0;  // K, input features

  // Rows [begin, begin + n) as a view of their own.
  WeightView slice_rows(std::int64_t begin, std::int64_t n) const {
    return {static_cast<const char*>(data) + begin * cols * dtype_bytes(dtype), dtype, n, cols};
  }
};

inline float bf16_to_f32(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN. Branch-free so conversion loops vectorise.
inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);

// Element i of a row of `dtype` as f32.
inline float load_as_f32(const void* row, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(row)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const std::uint16_t*>(row)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const std::uint16_t*>(row)[i]);
  }
  return 0.0f;
}

}  // namespace recur::kernels
