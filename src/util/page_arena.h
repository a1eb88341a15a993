// Long-lived buffers carved from large anonymous mappings that ask for transparent huge pages.
// The quantized weights live here: a prefill streams hundreds of MB of them per layer, and on
// 4 KiB pages every page is a TLB miss and a boundary the hardware prefetchers stop at.
#pragma once

#include <cstddef>
#include <vector>

namespace recur {

class PageArena {
 public:
  // Chunks are at least this large (a multiple of the 2 MiB huge page).
  static constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  PageArena() = default;
  PageArena(const PageArena&) = delete;
  PageArena& operator=(const PageArena&) = delete;
  ~PageArena();

  // Zeroed bytes aligned to 64, valid until the arena is destroyed; nullptr when the system has
  // no memory to map. Buffers are never freed one by one.
  void* allocate(std::size_t n);

  // Bytes handed out (what callers asked for, before alignment).
  std::size_t bytes() const { return bytes_; }
  // Bytes mapped; pages never written stay out of the resident set.
  std::size_t mapped_bytes() const;

 private:
  struct Chunk {
    unsigned char* base = nullptr;  // 2 MiB-aligned start of the usable range
    void* mapping = nullptr;        // what munmap takes
    std::size_t mapping_bytes = 0;
    std::size_t size = 0, used = 0;
  };
  std::vector<Chunk> chunks_;
  std::size_t bytes_ = 0;
};

}  // namespace recur
