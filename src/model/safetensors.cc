// Safetensors layout: u64 little-endian header length N, N bytes of JSON, then the data block.
// Each JSON entry is {"dtype", "shape", "data_offsets": [begin, end)} relative to the data block.
#include "model/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/json_depth.h"

namespace recur::model {

namespace {

// Upper bound on a header: real ones are well under 10 MiB even for 75k-tensor checkpoints.
constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;
// Real headers nest 3 deep ({name: {shape: [...]}}); error messages dump() values, which recurses
// once per level, so a header of "[[[[..." would overflow the stack.
constexpr int kMaxHeaderDepth = 16;

struct DTypeSpec {
  const char* text;
  std::optional<DType> dtype;  // nullopt: sized, not computed with
  std::size_t elem_bytes;
};

constexpr std::optional<DType> kNone = std::nullopt;
constexpr DTypeSpec kDTypes[] = {
    {"BF16", DType::kBF16, 2}, {"F16", DType::kF16, 2}, {"F32", DType::kF32, 4}, {"F64", kNone, 8},
    {"I64", kNone, 8},         {"U64", kNone, 8},       {"I32", kNone, 4},       {"U32", kNone, 4},
    {"I16", kNone, 2},         {"U16", kNone, 2},       {"I8", kNone, 1},        {"U8", kNone, 1},
    {"BOOL", kNone, 1},        {"F8_E4M3", kNone, 1},   {"F8_E5M2", kNone, 1},
};

const DTypeSpec* find_dtype(std::string_view text) {
  for (const auto& d : kDTypes) {
    if (text == d.text) return &d;
  }
  return nullptr;
}

Result<std::uint64_t> read_u64(const nlohmann::json& v, const std::string& file,
                               const std::string& tensor, const char* what) {
  if (!v.is_number_unsigned()) {
    return Error(StatusCode::kDataLoss,
                 "{}: tensor '{}': {} must be a non-negative integer, got {}", file, tensor, what,
                 v.dump());
  }
  return v.get<std::uint64_t>();
}

Result<TensorInfo> parse_entry(const std::string& name, const nlohmann::json& e,
                               const std::string& file) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
      !e.contains("data_offsets")) {
    return Error(StatusCode::kDataLoss,
                 "{}: tensor '{}': entry must be an object with dtype, shape and data_offsets",
                 file, name);
  }
  TensorInfo t;
  t.name = name;
  t.file = file;
  if (!e["dtype"].is_string()) {
    return Error(StatusCode::kDataLoss, "{}: tensor '{}': dtype is not a string", file, name);
  }
  t.dtype_text = e["dtype"].get<std::string>();
  const DTypeSpec* spec = find_dtype(t.dtype_text);
  if (spec == nullptr) {
    return Error(StatusCode::kDataLoss, "{}: tensor '{}': unknown dtype '{}'", file, name,
                 t.dtype_text);
  }
  t.dtype = spec->dtype;
  const auto& shape = e["shape"];
  if (!shape.is_array()) {
    return Error(StatusCode::kDataLoss, "{}: tensor '{}': shape is not an array", file, name);
  }
  std::uint64_t n_elems = 1;
  for (const auto& dim : shape) {
    RECUR_ASSIGN_OR_RETURN(std::uint64_t d, read_u64(dim, file, name, "shape dimension"));
    if (d > (1ull << 40) || (d != 0 && n_elems > (1ull << 50) / d)) {
      return Error(StatusCode::kDataLoss, "{}: tensor '{}': shape {} is too large", file, name,
                   shape.dump());
    }
    n_elems *= d;
    t.shape.push_back(static_cast<std::int64_t>(d));
  }
  const auto& offs = e["data_offsets"];
  if (!offs.is_array() || offs.size() != 2) {
    return Error(StatusCode::kDataLoss, "{}: tensor '{}': data_offsets must be [begin, end]", file,
                 name);
  }
  RECUR_ASSIGN_OR_RETURN(std::uint64_t begin, read_u64(offs[0], file, name, "data offset"));
  RECUR_ASSIGN_OR_RETURN(std::uint64_t end, read_u64(offs[1], file, name, "data offset"));
  if (end < begin) {
    return Error(StatusCode::kDataLoss, "{}: tensor '{}': data_offsets [{}, {}) end before begin",
                 file, name, begin, end);
  }
  if (end - begin != n_elems * spec->elem_bytes) {
    return Error(StatusCode::kDataLoss,
                 "{}: tensor '{}': {} bytes in data_offsets but dtype {} shape {} needs {}", file,
                 name, end - begin, t.dtype_text, shape_to_string(t.shape),
                 n_elems * spec->elem_bytes);
  }
  t.data_offset = begin;
  t.n_bytes = static_cast<std::size_t>(end - begin);
  return t;
}

// Offsets must lie inside the data block and no two tensors may share bytes.
Status check_layout(std::vector<TensorInfo>& tensors, std::uint64_t data_bytes,
                    const std::uint8_t* data_base, const std::string& file) {
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto begin_of = [&](std::size_t i) { return tensors[i].data_offset; };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return begin_of(a) != begin_of(b) ? begin_of(a) < begin_of(b)
                                      : tensors[a].n_bytes < tensors[b].n_bytes;
  });
  std::uint64_t prev_end = 0;
  const TensorInfo* prev = nullptr;
  for (std::size_t i : order) {
    const TensorInfo& t = tensors[i];
    std::uint64_t begin = begin_of(i);
    std::uint64_t end = begin + t.n_bytes;
    if (end > data_bytes) {
      return Error(StatusCode::kDataLoss,
                   "{}: tensor '{}': data_offsets [{}, {}) run past the data block of {} bytes",
                   file, t.name, begin, end, data_bytes);
    }
    // Zero-sized tensors occupy no bytes and cannot overlap anything.
    if (t.n_bytes > 0 && prev != nullptr && begin < prev_end) {
      return Error(StatusCode::kDataLoss, "{}: tensors '{}' and '{}' overlap at data offset {}",
                   file, prev->name, t.name, begin);
    }
    if (t.n_bytes > 0) {
      prev_end = end;
      prev = &t;
    }
  }
  for (auto& t : tensors) t.data = data_base + t.data_offset;
  return Status::ok();
}

}  // namespace

std::string shape_to_string(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Result<SafetensorsHeader> parse_safetensors(std::span<const std::uint8_t> bytes,
                                            const std::string& file) {
  if (bytes.size() < 8) {
    return Error(StatusCode::kDataLoss, "{}: truncated safetensors file ({} bytes, need >= 8)",
                 file, bytes.size());
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[static_cast<std::size_t>(i)];
  if (header_len > bytes.size() - 8) {
    return Error(StatusCode::kDataLoss,
                 "{}: safetensors header length {} runs past the end of the {}-byte file", file,
                 header_len, bytes.size());
  }
  if (header_len > kMaxHeaderBytes) {
    return Error(StatusCode::kDataLoss, "{}: safetensors header length {} exceeds {} bytes", file,
                 header_len, kMaxHeaderBytes);
  }
  SafetensorsHeader out;
  out.header_json = std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  if (json_nesting_depth(out.header_json) > kMaxHeaderDepth) {
    return Error(StatusCode::kDataLoss, "{}: safetensors header nests deeper than {} levels", file,
                 kMaxHeaderDepth);
  }
  auto json = nlohmann::json::parse(out.header_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Error(StatusCode::kDataLoss, "{}: safetensors header is not a valid JSON object", file);
  }
  for (const auto& [name, entry] : json.items()) {
    if (name == "__metadata__") {
      if (entry.is_object() && entry.contains("format") && entry["format"].is_string()) {
        out.format = entry["format"].get<std::string>();
      }
      continue;
    }
    if (name.empty()) {
      return Error(StatusCode::kDataLoss, "{}: safetensors header has an empty tensor name", file);
    }
    RECUR_ASSIGN_OR_RETURN(TensorInfo t, parse_entry(name, entry, file));
    out.tensors.push_back(std::move(t));
  }
  const std::uint64_t data_bytes = bytes.size() - 8 - header_len;
  RECUR_RETURN_IF_ERROR(check_layout(out.tensors, data_bytes, bytes.data() + 8 + header_len, file));
  return out;
}

}  // namespace recur::model
