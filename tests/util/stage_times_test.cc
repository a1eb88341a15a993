// The stage table of `recur bench --bench-stages` (util/stage_times.h): nested paths in order of
// first entry, calls counted, FLOPs added to every open scope, nothing recorded while off.
#include "util/stage_times.h"

#include <gtest/gtest.h>

#include <thread>

namespace recur::stages {
namespace {

struct Enabled {
  Enabled() {
    reset();
    set_enabled(true);
  }
  ~Enabled() {
    set_enabled(false);
    reset();
  }
};

TEST(StageTimes, NestedScopesFormPathsInOrderOfFirstEntry) {
  const Enabled on;
  for (int layer = 0; layer < 3; ++layer) {
    const Scope outer("layers");
    {
      const Scope mixer("attention");
      add_flops(10);
    }
    const Scope mlp("mlp");
    add_flops(5);
  }
  const std::vector<Stage> t = table();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].path, "layers");
  EXPECT_EQ(t[1].path, "layers/attention");
  EXPECT_EQ(t[2].path, "layers/mlp");
  EXPECT_EQ(t[0].depth, 0);
  EXPECT_EQ(t[1].depth, 1);
  EXPECT_EQ(t[0].calls, 3);
  EXPECT_EQ(t[1].calls, 3);
  EXPECT_EQ(t[0].flops, 45);  // a parent's figures include its children's
  EXPECT_EQ(t[1].flops, 30);
  EXPECT_EQ(t[2].flops, 15);
  EXPECT_GE(t[0].seconds, t[1].seconds + t[2].seconds);
}

TEST(StageTimes, TimesTheScope) {
  const Enabled on;
  {
    const Scope s("sleep");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::vector<Stage> t = table();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_GE(t[0].seconds, 0.02);
}

TEST(StageTimes, OffRecordsNothing) {
  reset();
  set_enabled(false);
  {
    const Scope s("off");
    add_flops(1);
  }
  EXPECT_TRUE(table().empty());
}

// A reset while a scope is open (the bench resets between reps) drops that scope's figures
// instead of writing into a table that no longer holds it.
TEST(StageTimes, ResetWhileOpenIsSafe) {
  const Enabled on;
  {
    const Scope s("open");
    reset();
    add_flops(3);
    const Scope child("child");
  }
  ASSERT_EQ(table().size(), 1u);
  EXPECT_EQ(table()[0].path, "child");
  EXPECT_EQ(table()[0].flops, 0);
  reset();
  { const Scope s("after"); }
  ASSERT_EQ(table().size(), 1u);
  EXPECT_EQ(table()[0].path, "after");
}

}  // namespace
}  // namespace recur::stages
