#include "util/malloc_policy.h"

#include <malloc.h>

namespace recur {

bool keep_freed_memory() {
  // mallopt answers 1 on success. The thresholds are above any single state or snapshot.
  constexpr int kLarge = 1 << 30;
  const bool arenas = mallopt(M_ARENA_MAX, 1) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kLarge) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, kLarge) == 1;
  return arenas && mmap && trim;
}

}  // namespace recur
