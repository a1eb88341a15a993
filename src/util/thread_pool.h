// A fixed pool of worker threads for data-parallel kernels: run(n_tasks, fn) calls fn(i) for
// every i in [0, n_tasks) across the workers plus the calling thread and returns when all are done.
// Which thread runs which index is not fixed, so callers must make each index's result independent
// of the thread (recur's kernels split output rows, never a reduction). Not for long-lived jobs.
// Thread-compatible: one caller at a time (the engine thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace recur {

class ThreadPool {
 public:
  // n_threads counts the caller: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Any callable fn(std::size_t). It is referenced, not wrapped in a std::function, so a call
  // does not allocate (the kernels run it hundreds of times per decoded token).
  template <typename Fn>
  void run(std::size_t n_tasks, const Fn& fn) {
    run_task(n_tasks, Task::of(fn));
  }

 private:
  // A non-owning reference to the caller's callable, valid while run() has not returned.
  struct Task {
    const void* obj = nullptr;
    void (*call)(const void*, std::size_t) = nullptr;
    template <typename Fn>
    static Task of(const Fn& fn) {
      return {&fn, [](const void* o, std::size_t i) { (*static_cast<const Fn*>(o))(i); }};
    }
    void operator()(std::size_t i) const { call(obj, i); }
  };

  void run_task(std::size_t n_tasks, Task fn);
  void worker_loop();
  // Runs tasks of generation `gen` until none are left or a newer job has started.
  void drain(const Task& fn, std::size_t gen);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const Task* job_ = nullptr;   // guarded by mu_
  std::size_t n_tasks_ = 0;     // guarded by mu_
  std::size_t next_ = 0;        // guarded by mu_
  std::size_t finished_ = 0;    // guarded by mu_
  std::size_t generation_ = 0;  // guarded by mu_
  bool stop_ = false;           // guarded by mu_
};

// Threads to use by default: the cores this process may run on.
int available_cores();

}  // namespace recur
