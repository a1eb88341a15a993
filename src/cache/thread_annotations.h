// Clang thread-safety annotations behind RECUR_ macros, and a Mutex that carries them (libstdc++'s
// std::mutex is not annotated). Under g++ the macros expand to nothing; build with clang and
// -Wthread-safety to have the guarded members checked. Lives in cache/ until a second module needs
// it (then it moves to util/).
#pragma once

#include <mutex>

#if defined(__clang__)
#define RECUR_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define RECUR_THREAD_ANNOTATION_(x)
#endif

#define RECUR_CAPABILITY(x) RECUR_THREAD_ANNOTATION_(capability(x))
#define RECUR_SCOPED_CAPABILITY RECUR_THREAD_ANNOTATION_(scoped_lockable)
#define RECUR_GUARDED_BY(x) RECUR_THREAD_ANNOTATION_(guarded_by(x))
#define RECUR_PT_GUARDED_BY(x) RECUR_THREAD_ANNOTATION_(pt_guarded_by(x))
#define RECUR_REQUIRES(...) RECUR_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define RECUR_EXCLUDES(...) RECUR_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define RECUR_ACQUIRE(...) RECUR_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define RECUR_RELEASE(...) RECUR_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))

namespace recur::cache {

class RECUR_CAPABILITY("mutex") Mutex {
 public:
  void lock() RECUR_ACQUIRE() { mu_.lock(); }
  void unlock() RECUR_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class RECUR_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) RECUR_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RECUR_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace recur::cache
