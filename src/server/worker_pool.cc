#include "server/worker_pool.h"

#include <algorithm>

namespace recur::server {

WorkerPool::WorkerPool(std::size_t min_threads, std::size_t max_threads,
                       std::chrono::milliseconds idle_retire)
    : min_threads_(std::max<std::size_t>(1, min_threads)),
      max_threads_(std::max(min_threads_, max_threads)),
      idle_retire_(idle_retire) {
  std::lock_guard lock(mu_);
  while (threads_.size() < min_threads_) spawn();
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::spawn() {
  ++idle_;
  std::thread t([this] { work(); });
  const auto id = t.get_id();
  threads_.emplace(id, std::move(t));
  peak_ = std::max(peak_, threads_.size());
}

void WorkerPool::join_retired() {
  for (const auto& id : retired_) {
    auto it = threads_.find(id);
    if (it == threads_.end()) continue;
    it->second.join();
    threads_.erase(it);
  }
  retired_.clear();
}

void WorkerPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (shutdown_) return;
    join_retired();
    jobs_.push_back(std::move(job));
    // Every queued job that no idle thread will take gets a new thread, up to the cap.
    const std::size_t alive = threads_.size() - retired_.size();
    if (jobs_.size() > idle_ && alive < max_threads_) spawn();
  }
  cv_.notify_one();
}

void WorkerPool::work() {
  // The thread counts as idle from spawn() on, so enqueue() never over- or under-spawns while it
  // is starting.
  std::unique_lock lock(mu_);
  for (;;) {
    const bool woke = cv_.wait_for(lock, idle_retire_, [&] { return shutdown_ || !jobs_.empty(); });
    if (!woke) {
      // Idle for a while: leave if the pool is above its floor.
      if (threads_.size() - retired_.size() > min_threads_) {
        --idle_;
        retired_.push_back(std::this_thread::get_id());
        return;
      }
      continue;
    }
    if (jobs_.empty()) {  // shutting down with nothing left
      --idle_;
      return;
    }
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    --idle_;
    lock.unlock();
    job();
    lock.lock();
    ++idle_;
  }
}

void WorkerPool::shutdown() {
  std::map<std::thread::id, std::thread> threads;
  {
    std::lock_guard lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
  }
  cv_.notify_all();
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
    retired_.clear();
  }
  // Threads still running jobs finish them (and the queued ones) before returning.
  for (auto& [id, t] : threads) t.join();
}

WorkerPoolStats WorkerPool::stats() const {
  std::lock_guard lock(mu_);
  const std::size_t alive = threads_.size() - retired_.size();
  return {
      .threads = alive, .busy = alive - idle_, .waiting_jobs = jobs_.size(), .peak_threads = peak_};
}

}  // namespace recur::server
