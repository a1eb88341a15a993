// The HTTP worker pool: one thread per connection being served, started on demand up to a cap and
// retired after a while idle. A fixed pool would let long streams occupy every worker, so that a
// /health probe or a request bound for a 503 waits behind them; here a new connection gets a
// thread at once until the cap (--http-threads) is reached, and idle ones give their memory back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace recur::server {

struct WorkerPoolStats {
  std::size_t threads = 0;  // alive
  std::size_t busy = 0;     // running a job
  std::size_t waiting_jobs = 0;
  std::size_t peak_threads = 0;
};

class WorkerPool {
 public:
  WorkerPool(std::size_t min_threads, std::size_t max_threads,
             std::chrono::milliseconds idle_retire = std::chrono::seconds(10));
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void enqueue(std::function<void()> job);
  // Runs what is queued, then joins every thread. Further enqueues are dropped.
  void shutdown();
  WorkerPoolStats stats() const;

 private:
  void spawn();  // requires mu_
  void work();
  void join_retired();  // requires mu_; joins threads that have returned

  const std::size_t min_threads_;
  const std::size_t max_threads_;
  const std::chrono::milliseconds idle_retire_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> retired_;
  std::size_t idle_ = 0;
  std::size_t peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace recur::server
