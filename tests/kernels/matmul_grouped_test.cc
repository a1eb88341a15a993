// matmul_grouped: every group's outputs are the bytes of a plain matmul of that group's rows,
// whatever the other groups (rows, K, weight kinds, decode-sized or not), the ISA and the threads.
#include "kernels/matmul_grouped.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;
using testing::runnable_isas;
using testing::ScopedIsa;

// A matrix quantized as a checkpoint holds it, then packed as the kernels read it.
struct OwnedQuant {
  std::vector<std::uint32_t> codes;
  std::vector<std::uint8_t> scales, biases, packed;
  WeightView view;
};

OwnedQuant quantized_weight(std::int64_t rows, std::int64_t cols, int bits, int gs,
                            std::uint32_t seed) {
  OwnedQuant q;
  const auto w = random_floats(static_cast<std::size_t>(rows * cols), seed);
  q.codes.resize(static_cast<std::size_t>(rows * cols * bits / 32));
  q.scales.resize(static_cast<std::size_t>(rows * (cols / gs) * 2));
  q.biases.resize(q.scales.size());
  quantize_rows(w.data(), rows, cols, bits, gs, DType::kBF16, q.codes.data(), q.scales.data(),
                q.biases.data());
  const MlxQuantized mlx{.codes = q.codes.data(),
                         .scales = q.scales.data(),
                         .biases = q.biases.data(),
                         .dtype = DType::kBF16,
                         .rows = rows,
                         .cols = cols,
                         .bits = bits,
                         .group_size = gs};
  q.view = packed_view(mlx, nullptr);
  q.packed.assign(static_cast<std::size_t>(q.view.total_bytes()), 0);
  q.view.data = q.packed.data();
  pack_quantized_rows(mlx, 0, rows, q.view);
  return q;
}

struct GroupSpec {
  std::int64_t n_rows, k_dim;
  std::vector<int> outs;  // indices into the test's weights
};

TEST(MatmulGrouped, EachGroupEqualsItsOwnMatmul) {
  // Weights: {bf16, K 97} x3, {f32, K 97}, {bf16, K 128}, {q4 g64, K 128}, {q8 g32, K 128},
  // {bf16, K 2048} (a mixture-of-experts' K), {q4 g64, K 2048}.
  std::vector<WeightView> ws;
  std::vector<testing::OwnedWeight> owned;
  std::vector<OwnedQuant> owned_q;
  for (const auto& [dt, n_out, k] :
       std::vector<std::tuple<DType, std::int64_t, std::int64_t>>{{DType::kBF16, 70, 97},
                                                                  {DType::kBF16, 131, 97},
                                                                  {DType::kBF16, 5, 97},
                                                                  {DType::kF32, 33, 97},
                                                                  {DType::kBF16, 200, 128},
                                                                  {DType::kBF16, 96, 2048}}) {
    owned.push_back(make_weight(dt, n_out, k, static_cast<std::uint32_t>(owned.size() + 7)));
  }
  owned_q.push_back(quantized_weight(48, 128, 4, 64, 91));
  owned_q.push_back(quantized_weight(40, 128, 8, 32, 92));
  owned_q.push_back(quantized_weight(80, 2048, 4, 64, 93));
  for (const auto& o : owned) ws.push_back(o.view);
  for (const auto& q : owned_q) ws.push_back(q.view);
  // ws: 0-2 bf16 K 97, 3 f32 K 97, 4 bf16 K 128, 5 bf16 K 2048, 6 q4 K 128, 7 q8 K 128,
  // 8 q4 K 2048.
  const std::vector<std::vector<GroupSpec>> calls = {
      // decode-sized only (the streaming run), one of them empty
      {{1, 97, {0, 1}}, {3, 128, {4, 6, 7}}, {0, 97, {2}}, {8, 2048, {5, 8}}},
      // prefill-sized only: tiles (< 16 rows) and lanes (16+ rows) side by side
      {{9, 97, {0, 1, 2}}, {16, 128, {6, 4}}, {17, 97, {3}}, {70, 2048, {5, 8}}, {33, 128, {7}}},
      // every group within one row block (<= 64 rows): one range of chunks per thread, parts
      // of 9-15 rows requesting their next slice (several slices: ws 1, 4, 5), lanes and
      // quantized parts beside them with their own chunk widths
      {{12, 2048, {5, 8}}, {20, 128, {4, 6}}, {15, 97, {1, 3}}, {9, 128, {4, 7}}, {40, 2048, {5}}},
      // both kinds in one call
      {{1, 97, {1}}, {40, 97, {0, 2, 3}}, {2, 2048, {8}}, {21, 2048, {5}}, {8, 128, {4, 7, 6}}},
      // one group (what matmul itself runs)
      {{64, 97, {0}}},
  };
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (std::size_t c = 0; c < calls.size(); ++c) {
        const auto& specs = calls[c];
        std::vector<std::vector<float>> xs;
        std::vector<std::vector<MatmulOut>> outs(specs.size());
        std::vector<std::vector<float>> got, want;
        std::vector<MatmulGroup> groups;
        for (std::size_t g = 0; g < specs.size(); ++g) {
          xs.push_back(random_floats(static_cast<std::size_t>(specs[g].n_rows * specs[g].k_dim),
                                     static_cast<std::uint32_t>(100 * c + g)));
        }
        for (std::size_t g = 0; g < specs.size(); ++g) {
          for (int i : specs[g].outs) {
            const WeightView& w = ws[static_cast<std::size_t>(i)];
            ASSERT_EQ(w.cols, specs[g].k_dim);
            const auto size = static_cast<std::size_t>(specs[g].n_rows * w.rows + 1);
            got.emplace_back(size, -3.0f);
            want.emplace_back(size, -3.0f);
            matmul(pool, xs[g].data(), specs[g].n_rows, w, want.back().data());
          }
        }
        std::size_t at = 0;
        for (std::size_t g = 0; g < specs.size(); ++g) {
          for (int i : specs[g].outs)
            outs[g].push_back({ws[static_cast<std::size_t>(i)], got[at++].data()});
          groups.push_back({.x = xs[g].data(), .n_rows = specs[g].n_rows, .outs = outs[g]});
        }
        matmul_grouped(pool, groups);
        for (std::size_t i = 0; i < got.size(); ++i) {
          const std::string what = std::string(isa_name(isa)) + " threads " +
                                   std::to_string(threads) + " call " + std::to_string(c) +
                                   " output " + std::to_string(i);
          ASSERT_TRUE(testing::same_bytes(got[i].data(), want[i].data(), got[i].size())) << what;
          ASSERT_EQ(got[i].back(), -3.0f) << "wrote past " << what;
        }
        // The same rows picked by index (MatmulGroup::rows) from a larger x, in reverse order at
        // odd rows: the indexed paths prepare them in place, the others gather them first.
        std::vector<std::vector<float>> big(specs.size());
        std::vector<std::vector<std::int32_t>> ids(specs.size());
        std::vector<MatmulGroup> indexed;
        for (std::size_t g = 0; g < specs.size(); ++g) {
          const std::int64_t n = specs[g].n_rows, k = specs[g].k_dim;
          big[g].assign(static_cast<std::size_t>((2 * n + 1) * k), 1e30f);
          for (std::int64_t r = 0; r < n; ++r) {
            const std::int32_t id = static_cast<std::int32_t>(2 * (n - 1 - r) + 1);
            ids[g].push_back(id);
            std::copy_n(xs[g].begin() + r * k, k, big[g].begin() + id * k);
          }
          indexed.push_back(
              {.x = big[g].data(), .n_rows = n, .outs = outs[g], .rows = ids[g].data()});
        }
        for (auto& o : got) std::fill(o.begin(), o.end(), -3.0f);
        matmul_grouped(pool, indexed);
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(testing::same_bytes(got[i].data(), want[i].data(), got[i].size()))
              << "indexed rows, " << isa_name(isa) << " threads " << threads << " call " << c
              << " output " << i;
          ASSERT_EQ(got[i].back(), -3.0f);
        }
      }
    }
  }
}

// A group's rows are the same bytes whichever other groups share the call and in which order:
// one expert's rows with and without others beside it (design invariant 1).
TEST(MatmulGrouped, GroupBytesDoNotDependOnTheOtherGroups) {
  const auto w = make_weight(DType::kBF16, 150, 300, 5);
  const auto other = make_weight(DType::kBF16, 90, 300, 6);
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t rows : {1, 5, 16, 40}) {
      const auto x = random_floats(static_cast<std::size_t>(rows * 300), 11);
      const auto x2 = random_floats(static_cast<std::size_t>(50 * 300), 12);
      std::vector<float> alone(static_cast<std::size_t>(rows * 150)), shared(alone.size());
      std::vector<float> y2(50 * 90);
      const MatmulOut a{w.view, alone.data()}, s{w.view, shared.data()}, o{other.view, y2.data()};
      const MatmulGroup one[] = {{.x = x.data(), .n_rows = rows, .outs = {&a, 1}}};
      matmul_grouped(pool, one);
      const MatmulGroup two[] = {{.x = x2.data(), .n_rows = 50, .outs = {&o, 1}},
                                 {.x = x.data(), .n_rows = rows, .outs = {&s, 1}}};
      matmul_grouped(pool, two);
      ASSERT_TRUE(testing::same_bytes(alone.data(), shared.data(), alone.size()))
          << isa_name(isa) << " rows " << rows;
    }
  }
}

// A mixture's experts pick their tokens from one x, each token chosen by several: the quantized
// paths quantize x once and copy each expert's rows (dispatch.cc share_quantized_rows). Each
// expert's bytes must still be those of its own matmul, with rows nobody picks holding values that
// would poison a shared quantization group (inf, NaN), experts of 1-70 rows, repeats and unsorted
// ids, bf16 and differently grouped quantized weights beside them, decode- and prefill-sized.
TEST(MatmulGrouped, ExpertsPickingRowsOfOneXEqualTheirOwnMatmuls) {
  constexpr std::int64_t kK = 256;
  const OwnedQuant q4 = quantized_weight(48, kK, 4, 64, 31);
  const OwnedQuant q8 = quantized_weight(40, kK, 8, 32, 32);
  const OwnedQuant q4b = quantized_weight(24, kK, 4, 128, 33);
  const auto bf16 = make_weight(DType::kBF16, 36, kK, 34);
  const WeightView ws[] = {q4.view, q8.view, q4b.view, bf16.view};
  for (const std::int64_t x_rows : {5, 90}) {
    auto x = random_floats(static_cast<std::size_t>(x_rows * kK), 40);
    // The last row is never picked.
    std::fill(x.end() - kK, x.end(), std::numeric_limits<float>::quiet_NaN());
    x[x.size() - kK] = std::numeric_limits<float>::infinity();
    std::vector<std::vector<std::int32_t>> ids;
    std::uint32_t state = 7;
    for (const std::int64_t n : {1, 3, 9, 70, 16, 2, 33, 4, 1}) {
      std::vector<std::int32_t> picked;
      for (std::int64_t r = 0; r < n; ++r) {
        state = state * 1664525u + 1013904223u;
        picked.push_back(static_cast<std::int32_t>((state >> 8) % (x_rows - 1)));
      }
      ids.push_back(picked);
    }
    for (Isa isa : runnable_isas()) {
      ScopedIsa scoped(isa);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<std::vector<float>> got, want;
        std::vector<std::vector<MatmulOut>> outs(ids.size());
        std::vector<MatmulGroup> groups;
        for (std::size_t g = 0; g < ids.size(); ++g) {
          const auto n = static_cast<std::int64_t>(ids[g].size());
          std::vector<float> rows(static_cast<std::size_t>(n * kK));
          for (std::int64_t r = 0; r < n; ++r) {
            std::copy_n(x.begin() + ids[g][static_cast<std::size_t>(r)] * kK, kK,
                        rows.begin() + r * kK);
          }
          // Each expert reads the q4 weight, some also another.
          std::vector<std::size_t> mine = {0, g % 4};
          if (g % 4 == 0) mine.pop_back();
          for (std::size_t i : mine) {
            want.emplace_back(static_cast<std::size_t>(n * ws[i].rows));
            matmul(pool, rows.data(), n, ws[i], want.back().data());
            got.emplace_back(want.back().size() + 1, -3.0f);
          }
        }
        std::size_t at = 0;
        for (std::size_t g = 0; g < ids.size(); ++g) {
          std::vector<std::size_t> mine = {0, g % 4};
          if (g % 4 == 0) mine.pop_back();
          for (std::size_t i : mine) outs[g].push_back({ws[i], got[at++].data()});
          groups.push_back({.x = x.data(),
                            .n_rows = static_cast<std::int64_t>(ids[g].size()),
                            .outs = outs[g],
                            .rows = ids[g].data()});
        }
        matmul_grouped(pool, groups);
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(testing::same_bytes(got[i].data(), want[i].data(), want[i].size()))
              << isa_name(isa) << " threads " << threads << " x rows " << x_rows << " output " << i;
          ASSERT_EQ(got[i].back(), -3.0f);
        }
      }
    }
  }
}

// The parts of a grouped decode call (a step's experts) may read in another order than a single
// matrix does (DecodeOrder::scattered_l1_prefetch): under every order each expert's rows are the
// bytes they have inside a large batch of the same expert.
TEST(MatmulGrouped, DecodePartsGiveTheSameBytesInEveryOrder) {
  constexpr std::int64_t kBatch = 20;
  std::vector<testing::OwnedWeight> experts;
  for (const auto& [n_out, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {300, 2048}, {5, 97}, {131, 768}, {260, 33}}) {
    experts.push_back(
        make_weight(DType::kBF16, n_out, k, static_cast<std::uint32_t>(experts.size() + 40)));
  }
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    std::vector<std::vector<float>> xs, batch;
    for (std::size_t e = 0; e < experts.size(); ++e) {
      const WeightView& w = experts[e].view;
      xs.push_back(random_floats(static_cast<std::size_t>(kBatch * w.cols),
                                 static_cast<std::uint32_t>(e + 70)));
      batch.emplace_back(static_cast<std::size_t>(kBatch * w.rows));
      matmul(pool, xs[e].data(), kBatch, w, batch[e].data());
    }
    for (int bits = 0; bits < 16; ++bits) {
      const testing::ScopedDecodeOrder scoped_order(bits);
      // Each expert's first rows: 1, 2, 4, 5 and 8 (a 4-row tile and a 1-row edge).
      for (std::int64_t rows : {1, 2, 4, 5, 8}) {
        std::vector<std::vector<float>> got;
        std::vector<std::vector<MatmulOut>> outs(experts.size());
        std::vector<MatmulGroup> groups;
        for (std::size_t e = 0; e < experts.size(); ++e) {
          const WeightView& w = experts[e].view;
          // Rows of the experts differ (1..rows), as a step's routing makes them.
          const std::int64_t m = 1 + (rows - 1 + static_cast<std::int64_t>(e)) % rows;
          got.emplace_back(static_cast<std::size_t>(m * w.rows));
          outs[e].push_back({w, got.back().data()});
          groups.push_back({.x = xs[e].data(), .n_rows = m, .outs = outs[e]});
        }
        matmul_grouped(pool, groups);
        for (std::size_t e = 0; e < experts.size(); ++e) {
          ASSERT_TRUE(testing::same_bytes(got[e].data(), batch[e].data(), got[e].size()))
              << isa_name(isa) << " order " << bits << " expert " << e << " rows "
              << groups[e].n_rows;
        }
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels
