#include "util/thread_pool.h"

#include <sched.h>

#include "util/check.h"

namespace recur {

ThreadPool::ThreadPool(int n_threads) {
  RECUR_CHECK(n_threads >= 1);
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// A worker that woke for job `gen` may only get here after that job finished and a new one began;
// it must not run the new job's indices with the old (destroyed) function.
void ThreadPool::drain(const Task& fn, std::size_t gen) {
  for (;;) {
    std::size_t i;
    {
      std::lock_guard lock(mu_);
      if (generation_ != gen || next_ >= n_tasks_) return;
      i = next_++;
    }
    fn(i);
    std::lock_guard lock(mu_);
    if (++finished_ == n_tasks_) done_.notify_all();
  }
}

void ThreadPool::run_task(std::size_t n_tasks, Task fn) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (std::size_t i = 0; i < n_tasks; ++i) fn(i);
    return;
  }
  std::size_t gen;
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_tasks_ = n_tasks;
    next_ = 0;
    finished_ = 0;
    gen = ++generation_;
  }
  wake_.notify_all();
  drain(fn, gen);
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return finished_ == n_tasks_; });
  job_ = nullptr;
  n_tasks_ = 0;
}

void ThreadPool::worker_loop() {
  std::size_t seen = 0;
  for (;;) {
    const Task* job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    drain(*job, seen);
  }
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace recur
