// Safetensors header parsing and validation over a memory-mapped file. Produces views into the
// mapping (never copies). Strict: every malformed header, bad offset or size mismatch is an error
// naming the file and the tensor. Not for writing files (modelgen does that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.h"
#include "util/status.h"

namespace recur::model {

struct TensorInfo {
  std::string name;
  // nullopt: a type the header may hold and offsets are checked for, but recur does not compute
  // with (dtype_text names it).
  std::optional<DType> dtype;
  std::string dtype_text;  // as written in the header, e.g. "BF16", "I64"
  std::vector<std::int64_t> shape;
  const std::uint8_t* data = nullptr;  // into the mapping
  std::size_t n_bytes = 0;
  std::uint64_t data_offset = 0;  // from the start of the data block
  std::string file;               // path of the shard, for error messages
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in header order
  std::string_view header_json;     // raw header bytes (for fingerprints)
  std::string format;               // __metadata__.format: "pt", "mlx", ... ("" when absent)
};

// Parses and validates the header of a whole safetensors file held in `bytes`.
// `file` is used in error messages only.
Result<SafetensorsHeader> parse_safetensors(std::span<const std::uint8_t> bytes,
                                            const std::string& file);

std::string shape_to_string(std::span<const std::int64_t> shape);

}  // namespace recur::model
