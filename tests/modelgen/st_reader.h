// A minimal safetensors reader written independently of modelgen's writer, so the tests check the
// files against the format, not against the writer's own idea of it.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace recur::modelgen::testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct StTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

struct StFile {
  std::string error;  // empty when the file parsed
  std::string bytes;
  std::uint64_t header_len = 0;
  std::string header;
  nlohmann::json metadata;
  std::map<std::string, StTensor> tensors;
  std::size_t data_start() const { return 8 + header_len; }
  // Element i of a tensor as float (BF16, F16 via the test's own decoding, F32).
  float value(const std::string& name, std::int64_t i) const;
};

inline float decode_half(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0) return sign * static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0f + static_cast<float>(mant) / 1024.0f, exp - 15);
}

inline float StFile::value(const std::string& name, std::int64_t i) const {
  const StTensor& t = tensors.at(name);
  const char* p = bytes.data() + data_start() + t.begin;
  if (t.dtype == "F32") {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  if (t.dtype == "F16") return decode_half(h);
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline StFile read_safetensors(const std::filesystem::path& p) {
  StFile f;
  f.bytes = slurp(p);
  if (f.bytes.size() < 8) return f.error = "shorter than 8 bytes", f;
  for (int i = 7; i >= 0; --i)
    f.header_len = (f.header_len << 8) | static_cast<unsigned char>(f.bytes[i]);
  if (8 + f.header_len > f.bytes.size()) return f.error = "header runs past the end", f;
  f.header = f.bytes.substr(8, f.header_len);
  auto j = nlohmann::json::parse(f.header, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return f.error = "header is not a JSON object", f;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      f.metadata = v;
      continue;
    }
    StTensor t;
    t.dtype = v.at("dtype").get<std::string>();
    t.shape = v.at("shape").get<std::vector<std::int64_t>>();
    t.begin = v.at("data_offsets").at(0).get<std::int64_t>();
    t.end = v.at("data_offsets").at(1).get<std::int64_t>();
    f.tensors[name] = t;
  }
  return f;
}

}  // namespace recur::modelgen::testing
