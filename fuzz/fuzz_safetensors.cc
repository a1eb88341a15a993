// libFuzzer target: the safetensors header parser and layout validator on an in-memory file. A
// file that parses has every tensor inside the data block, sized by its dtype and shape.
#include <cstddef>
#include <cstdint>
#include <span>

#include "model/safetensors.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  auto header = recur::model::parse_safetensors(bytes, "fuzz.safetensors");
  if (!header.is_ok()) {
    RECUR_CHECK(!header.status().message().empty());
    return 0;
  }
  RECUR_CHECK(header->header_json.data() == reinterpret_cast<const char*>(data) + 8);
  const std::uint8_t* data_block = data + 8 + header->header_json.size();
  for (const recur::model::TensorInfo& t : header->tensors) {
    RECUR_CHECK(!t.name.empty());
    RECUR_CHECK(t.data >= data_block && t.data + t.n_bytes <= data + size);
    RECUR_CHECK(t.data == data_block + t.data_offset);
    std::uint64_t n_elems = 1;
    for (std::int64_t d : t.shape) {
      RECUR_CHECK(d >= 0);
      n_elems *= static_cast<std::uint64_t>(d);
    }
    RECUR_CHECK(n_elems == 0 ? t.n_bytes == 0 : t.n_bytes % n_elems == 0);
    RECUR_CHECK(!recur::model::shape_to_string(t.shape).empty());
  }
  return 0;
}
