#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace recur {
namespace {

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.n_threads(), threads);
    for (size_t n : {0u, 1u, 2u, 7u, 100u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

// Blocks cover [0, count) once each, the last one short, none empty.
TEST(ThreadPool, RunBlocksCoversEveryItemOnce) {
  ThreadPool pool(3);
  for (std::int64_t count : {0, 1, 15, 16, 17, 100}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
    std::atomic<int> blocks{0};
    pool.run_blocks(count, 16, [&](std::int64_t begin, std::int64_t end) {
      ASSERT_LT(begin, end);
      ASSERT_LE(end - begin, 16);
      ASSERT_EQ(begin % 16, 0);
      blocks.fetch_add(1);
      for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
    });
    EXPECT_EQ(blocks.load(), (count + 15) / 16) << count;
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << count;
  }
}

TEST(ThreadPool, ManyConsecutiveJobsDoNotLoseWork) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int job = 0; job < 2000; ++job) {
    pool.run(5, [&](size_t i) { sum.fetch_add(static_cast<long>(i)); });
  }
  EXPECT_EQ(sum.load(), 2000L * 10);
}

// Workers that sleep at once (spin 0), spin briefly, or spin longer than the gaps between jobs
// must all see every job exactly once, including jobs published while they fall asleep.
TEST(ThreadPool, EverySpinSettingRunsEveryIndexOnce) {
  using std::chrono::microseconds;
  for (microseconds spin : {microseconds(0), microseconds(30), microseconds(5000)}) {
    ThreadPool pool(3, spin);
    EXPECT_EQ(pool.spin(), spin);
    for (int job = 0; job < 300; ++job) {
      const std::size_t n = 1 + static_cast<std::size_t>(job % 17);
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](std::size_t i) { hits[i].fetch_add(1); });
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << spin.count() << " " << job;
      // Every 50 jobs, a pause longer than the short spin, so workers go to sleep in between.
      if (job % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

// A task much longer than the spin: the caller, done with its own tasks, sleeps and must be woken
// by the worker that finishes last.
TEST(ThreadPool, CallerSleepsUntilTheLastSlowTaskFinishes) {
  ThreadPool pool(2, std::chrono::microseconds(10));
  std::atomic<int> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(2, [&](std::size_t i) {
    if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 2);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(30));
}

TEST(ThreadPool, DestroysWhileWorkersSpinOrSleep) {
  for (int spin_us : {0, 100000}) {
    ThreadPool pool(4, std::chrono::microseconds(spin_us));
    std::atomic<int> sum{0};
    pool.run(8, [&](std::size_t) { sum.fetch_add(1); });
    EXPECT_EQ(sum.load(), 8);
  }  // destructor joins: must not hang in either state
}

TEST(ThreadPool, AvailableCoresIsPositive) { EXPECT_GE(available_cores(), 1); }

}  // namespace
}  // namespace recur
