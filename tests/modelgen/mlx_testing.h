// Helpers of the quantized-checkpoint tests: a temporary folder, the expected MLX tensor table
// derived from the Hugging Face tables of expected_tables.h by model-families.md section 6 (written
// here independently of modelgen's mlx_layout), and reading tensors of a safetensors file as f32
// rows or as a quantized kernels::WeightView.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "expected_tables.h"
#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "modelgen/generator.h"
#include "st_reader.h"

namespace recur::modelgen::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("recur-modelgen-q-{}-{}", ::getpid(), counter++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// model-families.md 6: qwen3_5 names move from model.language_model.* to language_model.model.*;
// the tied lm_head copy of qwen3 is left out; conv1d (LFM2: conv.conv) [C, 1, K] becomes
// [C, K, 1]; every 2-D
// Linear/Embedding weight whose cols divide by the group size becomes U32 codes plus scales and
// biases in the checkpoint dtype.
inline Table mlx_table(const Table& hf, Family family, int bits, int group_size) {
  Table out;
  for (const auto& [hf_name, hf_entry] : hf) {
    std::string name = hf_name;
    Expected e = hf_entry;
    if (family == Family::kQwen3 && name == "lm_head.weight") continue;
    if (family == Family::kQwen3_5) name = "language_model.model." + name.substr(21);
    if (name.find("conv1d.weight") != std::string::npos || name.ends_with(".conv.conv.weight")) {
      e.shape = {e.shape[0], e.shape[2], 1};
    }
    if (e.shape.size() == 2 && e.shape[1] % group_size == 0) {
      const std::string path = name.substr(0, name.size() - 7);  // without ".weight"
      out[name] = {{e.shape[0], e.shape[1] * bits / 32}, "U32"};
      out[path + ".scales"] = {{e.shape[0], e.shape[1] / group_size}, e.dtype};
      out[path + ".biases"] = {{e.shape[0], e.shape[1] / group_size}, e.dtype};
    } else {
      out[name] = e;
    }
  }
  return out;
}

inline Table tensors_of(const StFile& f) {
  Table t;
  for (const auto& [name, st] : f.tensors) t[name] = {st.shape, st.dtype};
  return t;
}

inline std::int64_t n_elems(const StTensor& t) {
  std::int64_t n = 1;
  for (std::int64_t d : t.shape) n *= d;
  return n;
}

// Every element of a floating tensor as f32.
inline std::vector<float> values(const StFile& f, const std::string& name) {
  std::vector<float> out(static_cast<std::size_t>(n_elems(f.tensors.at(name))));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = f.value(name, static_cast<std::int64_t>(i));
  return out;
}

inline const char* data_of(const StFile& f, const std::string& name) {
  return f.bytes.data() + f.data_start() + f.tensors.at(name).begin;
}

inline kernels::DType dtype_of(const std::string& st_dtype) {
  return st_dtype == "F32"    ? kernels::DType::kF32
         : st_dtype == "BF16" ? kernels::DType::kBF16
                              : kernels::DType::kF16;
}

// The quantized weight <path>.weight/.scales/.biases of f as a view into f's bytes.
inline kernels::MlxQuantized quantized_view(const StFile& f, const std::string& path, int bits,
                                            int group_size) {
  const StTensor& scales = f.tensors.at(path + ".scales");
  return {.codes = reinterpret_cast<const std::uint32_t*>(data_of(f, path + ".weight")),
          .scales = data_of(f, path + ".scales"),
          .biases = data_of(f, path + ".biases"),
          .dtype = dtype_of(scales.dtype),
          .rows = scales.shape[0],
          .cols = scales.shape[1] * group_size,
          .bits = bits,
          .group_size = group_size};
}

inline nlohmann::json parse_config(const std::filesystem::path& p) {
  std::string text = slurp(p);
  for (std::size_t at; (at = text.find("Infinity")) != std::string::npos;) {
    text.replace(at, 8, "1e300");
  }
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace recur::modelgen::testing
