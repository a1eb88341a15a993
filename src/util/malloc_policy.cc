#include "util/malloc_policy.h"

#include <malloc.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RECUR_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RECUR_SANITIZER_ALLOCATOR 1
#endif

namespace recur {

bool keep_freed_memory() {
#ifdef RECUR_SANITIZER_ALLOCATOR
  // The sanitizer's allocator serves every allocation and ignores mallopt: nothing to set.
  return true;
#else
  // mallopt answers 1 on success. The thresholds are above any single state or snapshot.
  constexpr int kLarge = 1 << 30;
  const bool arenas = mallopt(M_ARENA_MAX, 1) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kLarge) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, kLarge) == 1;
  return arenas && mmap && trim;
#endif
}

}  // namespace recur
