#include "util/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include "util/check.h"

namespace recur {

namespace {

constexpr std::uint32_t generation_of(std::uint64_t ticket) {
  return static_cast<std::uint32_t>(ticket >> 32);
}
// The index of a generation whose tasks are all done, before the next job is written.
constexpr std::uint64_t kClosed = 0xffffffffu;

constexpr std::size_t index_of(std::uint64_t ticket) {
  return static_cast<std::size_t>(ticket & 0xffffffffu);
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, std::chrono::microseconds spin) : spin_(spin) {
  RECUR_CHECK(n_threads >= 1);
  RECUR_CHECK(spin.count() >= 0);
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

template <typename Done>
void ThreadPool::await(Done done, std::condition_variable& cv, std::atomic<int>& sleepers) {
  if (done()) return;
  if (spin_.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + spin_;
    for (int i = 1; !done(); ++i) {
      _mm_pause();
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
    }
    if (done()) return;
  }
  std::unique_lock lock(mu_);
  // seq_cst increment, then the check inside wait(): the notifier's seq_cst publish-then-load of
  // `sleepers` cannot miss us (one of the two sees the other's store), and it notifies under mu_.
  sleepers.fetch_add(1);
  cv.wait(lock, done);
  sleepers.fetch_sub(1);
}

void ThreadPool::drain(std::uint32_t gen) {
  for (;;) {
    std::uint64_t t = ticket_.load();
    if (generation_of(t) != gen) return;
    // Possibly already the next job's count, but then the caller has closed this generation
    // (index kClosed) and the CAS below fails: a successful claim proves n is this job's.
    const std::size_t n = n_tasks_.load(std::memory_order_relaxed);
    if (index_of(t) >= n) return;
    if (!ticket_.compare_exchange_weak(t, t + 1)) continue;
    job_(index_of(t));
    if (finished_.fetch_add(1) + 1 == n && sleeping_caller_.load() > 0) {
      std::lock_guard lock(mu_);
      done_.notify_all();
    }
  }
}

void ThreadPool::run_task(std::size_t n_tasks, Task fn) {
  if (n_tasks == 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (std::size_t i = 0; i < n_tasks; ++i) fn(i);
    return;
  }
  RECUR_CHECK(n_tasks < kClosed);
  // The previous generation is closed and all its tasks have returned: no thread reads job_
  // until it has claimed an index of the generation published below.
  job_ = fn;
  n_tasks_.store(n_tasks, std::memory_order_relaxed);
  finished_.store(0);
  const std::uint32_t gen = generation_of(ticket_.load()) + 1;
  ticket_.store(static_cast<std::uint64_t>(gen) << 32);
  if (sleeping_workers_.load() > 0) {
    std::lock_guard lock(mu_);
    wake_.notify_all();
  }
  drain(gen);
  await([&] { return finished_.load() == n_tasks; }, done_, sleeping_caller_);
  ticket_.store((static_cast<std::uint64_t>(gen) << 32) | kClosed);
}

void ThreadPool::worker_loop() {
  std::uint32_t seen = 0;
  for (;;) {
    await([&] { return stop_.load() || generation_of(ticket_.load()) != seen; }, wake_,
          sleeping_workers_);
    if (stop_.load()) return;
    seen = generation_of(ticket_.load());
    drain(seen);
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
