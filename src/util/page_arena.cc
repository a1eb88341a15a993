#include "util/page_arena.h"

#include <sys/mman.h>

#include <cstdint>

namespace recur {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

PageArena::~PageArena() {
  for (const Chunk& c : chunks_) ::munmap(c.mapping, c.mapping_bytes);
}

void* PageArena::allocate(std::size_t n) {
  const std::size_t need = round_up(n == 0 ? 1 : n, 64);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < need) {
    Chunk c;
    c.size = need > kChunkBytes ? round_up(need, kHugePage) : kChunkBytes;
    // One huge page more than the chunk, so its start can be moved to a 2 MiB boundary: a huge
    // page only backs an aligned 2 MiB range.
    c.mapping_bytes = c.size + kHugePage;
    void* p = ::mmap(nullptr, c.mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) return nullptr;
    c.mapping = p;
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    c.base = reinterpret_cast<unsigned char*>(round_up(addr, kHugePage));
    // Advice only: where transparent huge pages are off, the chunk is ordinary pages.
    ::madvise(c.base, c.size, MADV_HUGEPAGE);
    chunks_.push_back(c);
  }
  Chunk& c = chunks_.back();
  void* out = c.base + c.used;
  c.used += need;
  bytes_ += n;
  return out;
}

std::size_t PageArena::mapped_bytes() const {
  std::size_t total = 0;
  for (const Chunk& c : chunks_) total += c.mapping_bytes;
  return total;
}

}  // namespace recur
