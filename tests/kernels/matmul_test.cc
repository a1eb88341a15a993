// matmul on every runnable ISA against the scalar reference (odd shapes, misaligned pointers, K
// not a multiple of any tile) and the batch/thread invariance of invariant 1, compared as bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "kernels/kernels.h"
#include "kernels/matmul_isa.h"
#include "kernels/reference.h"
#include "test_util.h"

namespace recur::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;
using testing::runnable_isas;
using testing::ScopedIsa;

// |a - b| within twice the classic bound of recursive f32 summation over k_dim terms.
void expect_close_dot(const float* got, const float* want, const float* x, const WeightView& w,
                      std::int64_t n_rows, const char* what) {
  for (std::int64_t r = 0; r < n_rows; ++r) {
    for (std::int64_t n = 0; n < w.rows; ++n) {
      double mag = 0;
      const WeightView row = w.slice_rows(n, 1);
      for (std::int64_t k = 0; k < w.cols; ++k)
        mag += std::fabs(double(x[r * w.cols + k]) * load_as_f32(row.data, w.dtype, k));
      const double tol = 2.0 * double(w.cols + 2) * 6e-8 * mag + 1e-30;
      const float g = got[r * w.rows + n], e = want[r * w.rows + n];
      ASSERT_LE(std::fabs(double(g) - e), tol)
          << what << " row " << r << " col " << n << " K " << w.cols << ": " << g << " vs " << e;
    }
  }
}

TEST(Matmul, MatchesReferenceOnOddShapes) {
  ThreadPool pool(2);
  int case_id = 0;
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (DType dt : {DType::kBF16, DType::kF32, DType::kF16}) {
      for (std::int64_t k_dim : {0, 1, 15, 31, 32, 33, 64, 100, 257}) {
        for (std::int64_t n_out : {1, 3, 5, 16, 33, 65, 130}) {
          for (std::int64_t n_rows : {1, 2, 3, 5, 12, 17, 70}) {
            ++case_id;
            const std::int64_t pad = case_id % 3;  // misaligned weight, activation and output
            auto w = make_weight(dt, n_out, k_dim, static_cast<std::uint32_t>(case_id), pad);
            auto xs = random_floats(static_cast<std::size_t>(n_rows * k_dim + pad), case_id + 1);
            const float* x = xs.data() + pad;
            std::vector<float> got(static_cast<std::size_t>(n_rows * n_out + pad), -7.0f);
            std::vector<float> want(static_cast<std::size_t>(n_rows * n_out));
            matmul(pool, x, n_rows, w.view, got.data() + pad);
            ref::matmul(x, n_rows, w.view, want.data(), n_out);
            const std::string what = std::string(isa_name(isa)) + "/" + dtype_name(dt);
            if (isa == Isa::kScalar) {
              ASSERT_TRUE(testing::same_bytes(got.data() + pad, want.data(), want.size())) << what;
            } else {
              expect_close_dot(got.data() + pad, want.data(), x, w.view, n_rows, what.c_str());
            }
            for (std::int64_t i = 0; i < pad; ++i) ASSERT_EQ(got[i], -7.0f) << "wrote before y";
          }
        }
      }
    }
  }
}

// Row r of a batch equals row r computed in any smaller batch, alone at another offset, and with
// any thread count: memcmp, per ISA.
TEST(Matmul, RowsAreBatchAndThreadInvariant) {
  constexpr std::int64_t kRows = 37;
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 4; ++t) pools.push_back(std::make_unique<ThreadPool>(t));
  struct Shape {
    std::int64_t n_out, k_dim;
  };
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (DType dt : {DType::kBF16, DType::kF32, DType::kF16}) {
      // 2600 outputs: several streaming tasks per call at 1-8 rows (kernels/dispatch.cc).
      for (Shape s : {Shape{70, 100}, Shape{200, 1024}, Shape{33, 33}, Shape{2600, 40}}) {
        auto w = make_weight(dt, s.n_out, s.k_dim, 11);
        auto x = random_floats(static_cast<std::size_t>(kRows * s.k_dim), 12);
        std::vector<float> full(static_cast<std::size_t>(kRows * s.n_out));
        matmul(*pools[0], x.data(), kRows, w.view, full.data());
        std::vector<float> part(full.size());
        for (std::int64_t n = 1; n <= kRows; ++n) {
          ThreadPool& pool = *pools[static_cast<std::size_t>(n % 4)];
          // the first n rows
          matmul(pool, x.data(), n, w.view, part.data());
          ASSERT_TRUE(
              testing::same_bytes(part.data(), full.data(), static_cast<std::size_t>(n * s.n_out)))
              << isa_name(isa) << "/" << dtype_name(dt) << " n_rows " << n;
          // row n-1 alone
          matmul(pool, x.data() + (n - 1) * s.k_dim, 1, w.view, part.data());
          ASSERT_TRUE(testing::same_bytes(part.data(), full.data() + (n - 1) * s.n_out,
                                          static_cast<std::size_t>(s.n_out)))
              << isa_name(isa) << "/" << dtype_name(dt) << " row " << n - 1 << " alone";
        }
      }
    }
  }
}

// Decode-sized calls read their weight rows in an order chosen per CPU vendor (decode_order in
// kernels/matmul_isa.h): every order gives each row the bytes it has inside a large batch.
TEST(Matmul, DecodeOrdersGiveTheSameBytes) {
  constexpr std::int64_t kRows = 20;
  ThreadPool pool(2);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t n_out : {1, 4, 7, 300, 2600}) {
      for (std::int64_t k_dim : {1, 33, 100, 1024}) {
        auto w = make_weight(DType::kBF16, n_out, k_dim, static_cast<std::uint32_t>(n_out + k_dim));
        auto x = random_floats(static_cast<std::size_t>(kRows * k_dim), 9);
        std::vector<float> batch(static_cast<std::size_t>(kRows * n_out));
        matmul(pool, x.data(), kRows, w.view, batch.data());
        for (int bits = 0; bits < 16; ++bits) {
          const testing::ScopedDecodeOrder scoped_order(bits);
          for (std::int64_t n : {1, 2, 3, 4, 5, 8}) {
            std::vector<float> part(static_cast<std::size_t>(n * n_out));
            matmul(pool, x.data(), n, w.view, part.data());
            ASSERT_TRUE(testing::same_bytes(part.data(), batch.data(), part.size()))
                << isa_name(isa) << " N " << n_out << " K " << k_dim << " rows " << n << " order "
                << bits;
          }
        }
      }
    }
  }
}

// Large calls on avx512 run the lanes kernel (16 rows per vector, weight pairs broadcast): every
// row must equal the same row computed alone by the streaming tiles, byte for byte, across edge
// shapes of its micro-tiles (1-4 row groups x 6, 8 or 12 columns, by the row groups and K), K tails
// (odd K reads half a pair), several 64-row blocks, thread counts and misaligned operands. Zeros of
// both signs in x exercise the padding lanes.
TEST(Matmul, LargeBatchesEqualRowByRow) {
  struct Shape {
    std::int64_t n_out, k_dim;
  };
  ThreadPool pool1(1), pool3(3);
  int case_id = 0;
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    // Columns: 64+ (the lanes kernel's threshold, kLanesMinCols), last tiles of 1-11 columns;
    // K 1030 gives 8- or 12-column tiles, 1600 6 or 8 (by the L1 budget), 2100 the 6 of long
    // rows.
    for (Shape s :
         {Shape{65, 1}, Shape{98, 31}, Shape{99, 33}, Shape{100, 257}, Shape{97, 64},
          Shape{193, 96}, Shape{70, 40}, Shape{75, 1030}, Shape{66, 1600}, Shape{71, 2100}}) {
      for (std::int64_t n_rows : {16, 17, 40, 49, 64, 65, 100, 130, 200}) {
        ++case_id;
        const std::int64_t pad = case_id % 3;
        auto w =
            make_weight(DType::kBF16, s.n_out, s.k_dim, static_cast<std::uint32_t>(case_id), pad);
        auto xs = random_floats(static_cast<std::size_t>(n_rows * s.k_dim + pad), case_id + 7);
        for (std::size_t i = 0; i < xs.size(); i += 11) xs[i] = (i / 11) % 2 ? 0.0f : -0.0f;
        const float* x = xs.data() + pad;
        ThreadPool& pool = case_id % 2 ? pool1 : pool3;
        std::vector<float> all(static_cast<std::size_t>(n_rows * s.n_out + 1), -5.0f);
        matmul(pool, x, n_rows, w.view, all.data());
        ASSERT_EQ(all.back(), -5.0f) << "wrote past y";
        std::vector<float> one(static_cast<std::size_t>(s.n_out));
        for (std::int64_t r = 0; r < n_rows; ++r) {
          matmul(pool, x + r * s.k_dim, 1, w.view, one.data());
          ASSERT_TRUE(testing::same_bytes(one.data(), all.data() + r * s.n_out, one.size()))
              << isa_name(isa) << " N " << s.n_out << " K " << s.k_dim << " rows " << n_rows
              << " row " << r;
        }
      }
    }
  }
}

// matmul_fused over several weights (mixed sizes and dtypes, an empty one) writes exactly the
// bytes of one matmul call per weight, for decode-sized and prefill-sized row counts, and
// nothing outside each output.
TEST(Matmul, FusedEqualsSeparateCalls) {
  constexpr std::int64_t kK = 96;
  struct Part {
    DType dt;
    std::int64_t n_out;
  };
  const std::vector<Part> parts = {{DType::kBF16, 300}, {DType::kBF16, 16},  {DType::kF32, 5},
                                   {DType::kBF16, 0},   {DType::kF16, 2600}, {DType::kBF16, 1}};
  std::vector<testing::OwnedWeight> ws;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    ws.push_back(make_weight(parts[i].dt, parts[i].n_out, kK, static_cast<std::uint32_t>(40 + i)));
  }
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (std::int64_t n_rows : {1, 3, 8, 9, 70}) {
        auto x = random_floats(static_cast<std::size_t>(n_rows * kK), 50 + n_rows);
        std::vector<std::vector<float>> fused, separate;
        std::vector<MatmulOut> outs;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          const auto size = static_cast<std::size_t>(n_rows * parts[i].n_out + 1);
          fused.emplace_back(size, -3.0f);
          separate.emplace_back(size, -3.0f);
          outs.push_back({ws[i].view, fused.back().data()});
          matmul(pool, x.data(), n_rows, ws[i].view, separate.back().data());
        }
        matmul_fused(pool, x.data(), n_rows, outs);
        for (std::size_t i = 0; i < parts.size(); ++i) {
          ASSERT_TRUE(testing::same_bytes(fused[i].data(), separate[i].data(), fused[i].size()))
              << isa_name(isa) << " threads " << threads << " rows " << n_rows << " part " << i;
          ASSERT_EQ(fused[i].back(), -3.0f) << "wrote past output " << i;
        }
      }
    }
  }
}

// Decode-sized calls split their columns into one range of chunks per thread, and threads done
// with their own take chunks from the back of others' (kernels/dispatch.cc). With more threads
// than cores the host preempts them mid-range, so ranges are finished by thieves: every chunk
// must still be computed exactly once, with the bytes of a single-threaded call.
TEST(Matmul, StreamingChunksAreEachComputedOnceUnderStealing) {
  constexpr std::int64_t kK = 64;
  const std::vector<std::int64_t> sizes = {128 * 37 + 5, 1, 129};
  std::vector<testing::OwnedWeight> ws;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ws.push_back(make_weight(DType::kBF16, sizes[i], kK, static_cast<std::uint32_t>(70 + i)));
  }
  ThreadPool one(1);
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    for (std::int64_t n_rows : {1, 4, 8}) {
      auto x = random_floats(static_cast<std::size_t>(n_rows * kK), 80 + n_rows);
      std::vector<std::vector<float>> want;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        want.emplace_back(static_cast<std::size_t>(n_rows * sizes[i]));
        matmul(one, x.data(), n_rows, ws[i].view, want.back().data());
      }
      for (int threads : {2, 5, 8}) {
        ThreadPool pool(threads);
        for (int rep = 0; rep < 30; ++rep) {
          std::vector<std::vector<float>> got;
          std::vector<MatmulOut> outs;
          for (std::size_t i = 0; i < sizes.size(); ++i) {
            got.emplace_back(want[i].size(), std::nanf(""));
            outs.push_back({ws[i].view, got.back().data()});
          }
          matmul_fused(pool, x.data(), n_rows, outs);
          for (std::size_t i = 0; i < sizes.size(); ++i) {
            ASSERT_TRUE(testing::same_bytes(got[i].data(), want[i].data(), got[i].size()))
                << isa_name(isa) << " rows " << n_rows << " threads " << threads << " rep " << rep
                << " part " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace recur::kernels
