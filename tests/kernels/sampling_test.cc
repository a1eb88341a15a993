#include "kernels/sampling.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/reference.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::ScopedIsa;

// sample_exp stays within 3e-7 of exp; below -87 it is 0.
TEST(Sampling, ExpIsCloseToExp) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-100.0f, 0.0f), near(-2.0f, 0.0f);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) x.push_back(i % 2 ? wide(rng) : near(rng));
  x.insert(x.end(), {0.0f, -0.0f, -87.0f, -87.5f, -1e-30f, -0.3465736f, -0.3465737f, -200.0f});
  for (float v : x) {
    const double want = v < -87.0f ? 0.0 : std::exp(static_cast<double>(v));
    ASSERT_LE(std::abs(sample_exp(v) - want), 3e-7 * want) << v;
  }
}

struct Row {
  std::vector<float> logits;
  std::vector<std::uint64_t> allowed;
};

// Logits spread like a model's, some far below the rest (weights that underflow), lengths that end
// mid-block, and masks that are empty, full, sparse and dense word by word.
Row make_row(std::int64_t n, int seed, bool masked) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::normal_distribution<float> logit(0.0f, 4.0f);
  Row r;
  for (std::int64_t i = 0; i < n; ++i) r.logits.push_back(i % 97 == 5 ? -300.0f : logit(rng));
  if (masked) {
    for (std::int64_t w = 0; w < (n + 63) / 64; ++w) {
      const std::uint64_t bits = (std::uint64_t{rng()} << 32) | rng();
      switch (w % 4) {
        case 0:
          r.allowed.push_back(0);
          break;
        case 1:
          r.allowed.push_back(~std::uint64_t{0});
          break;
        case 2:
          r.allowed.push_back(bits & (bits >> 7) & (bits >> 13));
          break;
        default:
          r.allowed.push_back(bits);
          break;
      }
    }
    r.allowed[0] |= 1;  // at least one
  }
  return r;
}

// Every ISA gives the reference's bits: the max, and each block's sum, for every temperature,
// min-p and mask, so a seed draws the same token on every machine.
TEST(Sampling, EveryIsaMatchesTheReferenceBitForBit) {
  for (std::int64_t n : {1, 63, 64, 65, 1000, 151936, 248320 + 7}) {
    for (bool masked : {false, true}) {
      const Row r = make_row(n, static_cast<int>(n) + masked, masked);
      const std::uint64_t* allowed = masked ? r.allowed.data() : nullptr;
      for (float scale : {1.0f, 1.0f / 0.7f, 10.0f}) {
        for (float floor : {0.0f, 0.05f}) {
          SampleRow row{.logits = r.logits.data(),
                        .n = n,
                        .scale = scale,
                        .allowed = allowed,
                        .floor = floor};
          const float max = ref::sample_max(r.logits.data(), n, allowed);
          row.shift = max * scale;
          std::vector<double> want((n + 63) / 64);
          ref::sample_block_sums(row, want.data());
          double total = 0;
          for (double b : want) total += b;
          EXPECT_GE(total, 1.0);  // the largest token's weight is 1
          for (Isa isa : testing::runnable_isas()) {
            ScopedIsa scoped(isa);
            EXPECT_EQ(std::bit_cast<std::uint32_t>(sample_max(r.logits.data(), n, allowed)),
                      std::bit_cast<std::uint32_t>(max))
                << isa_name(isa) << " n=" << n;
            std::vector<double> got(want.size(), -1.0);
            sample_block_sums(row, got.data());
            for (std::size_t b = 0; b < want.size(); ++b) {
              ASSERT_EQ(std::bit_cast<std::uint64_t>(got[b]), std::bit_cast<std::uint64_t>(want[b]))
                  << isa_name(isa) << " n=" << n << " masked=" << masked << " scale=" << scale
                  << " floor=" << floor << " block " << b;
            }
          }
        }
      }
    }
  }
}

// A block's sum is its weights' sum, and only allowed tokens at or above the floor count.
TEST(Sampling, BlockSumsCountOnlyKeptTokens) {
  std::vector<float> logits(130, -1.0f);
  logits[3] = 0.0f;
  logits[70] = 0.0f;
  std::vector<std::uint64_t> allowed = {1ull << 3 | 1ull << 4, 1ull << 6, 0};
  SampleRow row{.logits = logits.data(),
                .n = 130,
                .scale = 1.0f,
                .shift = 0.0f,
                .allowed = allowed.data(),
                .floor = 0.5f};
  for (Isa isa : testing::runnable_isas()) {
    ScopedIsa scoped(isa);
    EXPECT_EQ(sample_max(logits.data(), 130, allowed.data()), 0.0f);
    std::vector<double> blocks(3);
    sample_block_sums(row, blocks.data());
    EXPECT_EQ(blocks[0], 1.0);  // id 4's weight e^-1 is below the floor
    EXPECT_EQ(blocks[1], 1.0);
    EXPECT_EQ(blocks[2], 0.0);
    row.floor = 0.0f;
    sample_block_sums(row, blocks.data());
    EXPECT_EQ(blocks[0], 1.0 + static_cast<double>(sample_exp(-1.0f)));
    row.floor = 0.5f;
    EXPECT_EQ(sample_max(logits.data(), 130, std::vector<std::uint64_t>{0, 0, 0}.data()),
              -INFINITY);
  }
}

}  // namespace
}  // namespace recur::kernels
