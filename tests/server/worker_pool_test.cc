// The on-demand HTTP worker pool: a job gets a thread at once while the pool is under its cap,
// waits beyond it, idle threads above the floor retire, and shutdown runs what is queued.
#include "server/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>

namespace recur::server {
namespace {

using namespace std::chrono_literals;

template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(WorkerPool, LongJobsDoNotDelayANewOneUnderTheCap) {
  WorkerPool pool(2, 16);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::latch started(10);
  for (int i = 0; i < 10; ++i) {
    pool.enqueue([&, released] {
      started.count_down();
      released.wait();
    });
  }
  started.wait();  // all ten run at once though the floor is 2
  std::promise<void> quick;
  pool.enqueue([&] { quick.set_value(); });
  EXPECT_EQ(quick.get_future().wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(eventually([&] { return pool.stats().busy == 10; }));
  release.set_value();
  EXPECT_TRUE(eventually([&] { return pool.stats().busy == 0; }));
  EXPECT_GE(pool.stats().peak_threads, 11u);
}

TEST(WorkerPool, BeyondTheCapJobsWaitForAThread) {
  WorkerPool pool(1, 2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    pool.enqueue([&, released] {
      released.wait();
      ran.fetch_add(1);
    });
  }
  EXPECT_TRUE(eventually([&] { return pool.stats().busy == 2; }));
  EXPECT_EQ(pool.stats().threads, 2u);
  EXPECT_EQ(pool.stats().waiting_jobs, 3u);
  release.set_value();
  EXPECT_TRUE(eventually([&] { return ran.load() == 5; }));
}

TEST(WorkerPool, IdleThreadsAboveTheFloorRetire) {
  WorkerPool pool(1, 8, 20ms);
  std::latch started(6);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 6; ++i) {
    pool.enqueue([&, released] {
      started.count_down();
      released.wait();
    });
  }
  started.wait();
  EXPECT_EQ(pool.stats().threads, 6u);
  release.set_value();
  EXPECT_TRUE(eventually([&] { return pool.stats().threads == 1; }));
  std::promise<void> again;
  pool.enqueue([&] { again.set_value(); });  // joins the retired threads, still serves
  EXPECT_EQ(again.get_future().wait_for(5s), std::future_status::ready);
}

TEST(WorkerPool, ShutdownRunsQueuedJobsThenRefusesNewOnes) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(1, 1);
    for (int i = 0; i < 20; ++i) pool.enqueue([&] { ran.fetch_add(1); });
    pool.shutdown();
    EXPECT_EQ(ran.load(), 20);
    pool.enqueue([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace recur::server
