// The hot path does not allocate: after one warm-up call of each shape, matmul (every runnable
// ISA), attention and the recurrences on a multi-thread pool make no heap allocation. Counted by
// replacing the global operator new in this test binary.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "kernels/kernels.h"
#include "test_util.h"

namespace {
std::atomic<long> g_allocations{0};
}

// GCC 12 flags free() of memory from the replaced operator new once inlined into gtest's code
// (-Wmismatched-new-delete); both sides here are malloc/free, so the pairing is right.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace recur::kernels {
namespace {

TEST(NoAlloc, KernelsDoNotAllocateAfterWarmUp) {
  ThreadPool pool(3);
  auto w = testing::make_weight(DType::kBF16, 96, 100, 1);
  auto x = testing::random_floats(20 * 100, 2);
  std::vector<float> y(20 * 96);
  auto kv = testing::random_floats(40 * 2 * 16, 3);
  auto q = testing::random_floats(40 * 4 * 16, 4);
  std::vector<float> out(40 * 4 * 16);
  const AttentionShape att{.n_q = 40,
                           .pos0 = 0,
                           .n_kv = 40,
                           .n_heads = 4,
                           .n_kv_heads = 2,
                           .head_dim = 16,
                           .scale = 0.25f};
  std::vector<float> state(2 * 8 * 8, 0.0f), gates(40 * 2, -0.1f);
  auto qkv = testing::random_floats(40 * 32, 5);
  std::vector<float> o(40 * 2 * 8);
  const GatedDeltaInputs gin{.q = qkv.data(),
                             .k = qkv.data() + 8,
                             .v = qkv.data() + 16,
                             .g = gates.data(),
                             .beta = gates.data()};
  const GatedDeltaShape gsh{
      .n_tokens = 40, .n_k_heads = 1, .n_v_heads = 2, .k_dim = 8, .v_dim = 8, .qkv_stride = 32};
  for (Isa isa : testing::runnable_isas()) {
    testing::ScopedIsa scoped(isa);
    auto step = [&] {
      matmul(pool, x.data(), 20, w.view, y.data());
      matmul(pool, x.data(), 1, w.view, y.data());
      attention(pool, q.data(), kv.data(), kv.data(), out.data(), att);
      gated_delta_rule(pool, gin, state.data(), o.data(), gsh);
      swiglu(x.data(), x.data() + 100, y.data(), 100);
    };
    step();  // warm-up: per-thread scratch grows once
    const long before = g_allocations.load();
    for (int i = 0; i < 20; ++i) step();
    EXPECT_EQ(g_allocations.load() - before, 0) << isa_name(isa);
  }
}

}  // namespace
}  // namespace recur::kernels
