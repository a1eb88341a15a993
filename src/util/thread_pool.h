// A fixed pool of worker threads for data-parallel kernels: run(n_tasks, fn) calls fn(i) for
// every i in [0, n_tasks) across the workers plus the calling thread and returns when all are done.
// Which thread runs which index is not fixed, so callers must make each index's result independent
// of the thread (recur's kernels split output rows, never a reduction). Not for long-lived jobs.
// Thread-compatible: one caller at a time (the engine thread).
//
// A decode step is ~100-200 short runs back to back. Waking a sleeping thread costs a futex call
// and, on a VM whose idle vCPU has halted, tens of microseconds before it runs; so idle workers
// (and the caller waiting for stragglers) first spin for `spin` on an atomic, then sleep.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace recur {

class ThreadPool {
 public:
  static constexpr std::chrono::microseconds kDefaultSpin{1000};

  // n_threads counts the caller: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads, std::chrono::microseconds spin = kDefaultSpin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return static_cast<int>(workers_.size()) + 1; }
  std::chrono::microseconds spin() const { return spin_; }
  // Any callable fn(std::size_t). It is referenced, not wrapped in a std::function, so a call
  // does not allocate (the kernels run it hundreds of times per decoded token).
  template <typename Fn>
  void run(std::size_t n_tasks, const Fn& fn) {
    run_task(n_tasks, Task::of(fn));
  }
  // fn(begin, end) for [0, count) in blocks of `block` items, a task each: the per-row work
  // beside the matmuls (norms, RoPE, gathers, a mixture's routing), whose bytes depend on each
  // row alone, so any split gives those of one call. One block runs inline on the caller (a
  // decode step's few rows are not worth waking the workers).
  template <typename Fn>
  void run_blocks(std::int64_t count, std::int64_t block, const Fn& fn) {
    if (count <= 0) return;
    if (count <= block) return fn(std::int64_t{0}, count);
    const auto body = [&](std::size_t t) {
      const std::int64_t begin = static_cast<std::int64_t>(t) * block;
      fn(begin, begin + block < count ? begin + block : count);
    };
    run(static_cast<std::size_t>((count + block - 1) / block), body);
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
  // Claims and runs tasks of job `gen` until none are left or a newer job has started.
  void drain(std::uint32_t gen);
  // Spins up to spin_ while !done(), then sleeps on cv (counting itself in sleepers) until done().
  template <typename Done>
  void await(Done done, std::condition_variable& cv, std::atomic<int>& sleepers);

  std::vector<std::thread> workers_;
  const std::chrono::microseconds spin_;
  // The current job: written by the caller before it publishes a new generation in ticket_.
  Task job_;
  std::atomic<std::size_t> n_tasks_{0};
  // (generation << 32) | next unclaimed index: a worker claims an index only with a CAS that
  // also checks the generation, so a late worker never runs a new job's index with an old job.
  std::atomic<std::uint64_t> ticket_{0xffffffffu};
  std::atomic<std::size_t> finished_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;  // workers sleeping for a new generation
  std::condition_variable done_;  // the caller sleeping for stragglers
  std::atomic<int> sleeping_workers_{0};
  std::atomic<int> sleeping_caller_{0};
};

// Threads to use by default: the cores this process may run on.
int available_cores();

}  // namespace recur
