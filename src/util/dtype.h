// The floating-point element types recur reads and writes (checkpoint weights, KV cache) and their
// exact conversions to and from f32 (IEEE, round to nearest even). One definition for the kernels,
// the loader and the checkpoint generator.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace recur {

enum class DType : std::uint8_t { kF32, kBF16, kF16 };

constexpr std::int64_t dtype_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }
// "f32", "bf16", "f16": the words flags and logs use.
const char* dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view word);

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
// Round to nearest even; overflow becomes infinity, NaN a quiet NaN.
std::uint16_t f32_to_f16(float f);

}  // namespace recur
