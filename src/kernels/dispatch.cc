// Per-ISA selection for the kernels with vector paths: matmul, attention and the recurrences.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/amx_kernel.h"
#include "kernels/matmul_impl.h"
#include "kernels/matmul_isa.h"
#include "kernels/reference.h"
#include "kernels/vec_isa.h"

namespace recur::kernels::detail {
namespace {

constexpr std::int64_t kScalarColumnBlock = 64;

void matmul_scalar(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w,
                   float* y) {
  const std::int64_t n_blocks = (w.rows + kScalarColumnBlock - 1) / kScalarColumnBlock;
  pool.run(static_cast<std::size_t>(n_blocks), [&](std::size_t b) {
    const std::int64_t n0 = static_cast<std::int64_t>(b) * kScalarColumnBlock;
    const std::int64_t nb = std::min(kScalarColumnBlock, w.rows - n0);
    ref::matmul(x, n_rows, w.slice_rows(n0, nb), y + n0, w.rows);
  });
}

// Output blocks: multiples of the AMX tile grid (32) and of every micro-tile. Tasks walk M blocks
// fastest so consecutive tasks share a block of W while it is hot in cache.
constexpr std::int64_t kBlockN = 64;
constexpr std::int64_t kBlockM = 64;
// Streaming calls: one task reads 256 contiguous weight rows, so its prefetches run ahead within
// its own block rather than into the other thread's.
constexpr std::int64_t kStreamBlockN = 256;

using BlockFn = void (*)(const MatmulOperands&, const MatmulBlock&);

void run_blocks(ThreadPool& pool, const MatmulOperands& op, BlockFn fn) {
  const std::int64_t block_n = op.n_rows <= kStreamRows ? kStreamBlockN : kBlockN;
  const std::int64_t m_blocks = (op.n_rows + kBlockM - 1) / kBlockM;
  const std::int64_t n_blocks = (op.w.rows + block_n - 1) / block_n;
  pool.run(static_cast<std::size_t>(m_blocks * n_blocks), [&](std::size_t t) {
    const auto mb = static_cast<std::int64_t>(t) % m_blocks;
    const auto nb = static_cast<std::int64_t>(t) / m_blocks;
    MatmulBlock b{.m0 = mb * kBlockM,
                  .m1 = std::min(op.n_rows, (mb + 1) * kBlockM),
                  .n0 = nb * block_n,
                  .n1 = std::min(op.w.rows, (nb + 1) * block_n)};
    fn(op, b);
  });
}

// Activation scratch of the calling (engine) thread: grows to the largest call, then is reused.
template <typename T>
T* scratch(std::int64_t n) {
  thread_local std::vector<T> buf;
  if (static_cast<std::int64_t>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

// Runs fn(r0, r1) over blocks of kPrepRows activation rows on the pool (the conversion is a
// tenth of a large matmul's time; done by one thread it would cap the speed-up).
constexpr std::int64_t kPrepRows = 16;
static_assert(kPrepRows == amx::kTileRows, "AMX packing works in blocks of tile rows");
template <typename Fn>
void for_row_blocks(ThreadPool& pool, std::int64_t n_rows, const Fn& fn) {
  const std::int64_t n_blocks = (n_rows + kPrepRows - 1) / kPrepRows;
  pool.run(static_cast<std::size_t>(n_blocks), [&](std::size_t b) {
    const std::int64_t r0 = static_cast<std::int64_t>(b) * kPrepRows;
    fn(r0, std::min(n_rows, r0 + kPrepRows));
  });
}

}  // namespace

void matmul_dispatch(ThreadPool& pool, const float* x, std::int64_t n_rows, const WeightView& w,
                     float* y, Isa isa) {
  MatmulOperands op{.x = x, .w = w, .y = y, .n_rows = n_rows};
  const ActivationRows rows{.x = x, .n_rows = n_rows, .k_dim = w.cols};
  const bool bf16 = w.dtype == DType::kBF16;
  switch (isa) {
    case Isa::kAmx:
      if (bf16) {
        std::uint16_t* packed = scratch<std::uint16_t>(amx_vnni_elements(n_rows, w.cols));
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t) {
          amx_pack_x_block(rows, r0 / kPrepRows, packed);  // kPrepRows == AMX tile rows
        });
        op.x_vnni = packed;
        return run_blocks(pool, op, matmul_block_amx);
      }
      return run_blocks(pool, op, matmul_block_avx512);
    case Isa::kAvx512:
      if (bf16) {
        op.ld_bf16 = (w.cols + 31) / 32 * 32;
        std::uint16_t* xb = scratch<std::uint16_t>(n_rows * op.ld_bf16);
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t r1) {
          to_bf16_rows_avx512(rows, r0, r1, op.ld_bf16, xb);
        });
        op.x_bf16 = xb;
      }
      return run_blocks(pool, op, matmul_block_avx512);
    case Isa::kAvx2:
      if (bf16) {
        float* xr = scratch<float>(n_rows * w.cols);
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t r1) {
          round_rows_avx2(rows, r0, r1, xr);
        });
        op.x_rounded = xr;
      }
      return run_blocks(pool, op, matmul_block_avx2);
    case Isa::kScalar:
    case Isa::kAuto:
      return matmul_scalar(pool, x, n_rows, w, y);
  }
}

void attention_query(const float* q, const void* k_cache, const void* v_cache, float* out,
                     const AttentionShape& shape, std::int64_t i, std::int64_t h, Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return attention_query_avx512(q, k_cache, v_cache, out, shape, i, h);
    case Isa::kAvx2:
      return attention_query_avx2(q, k_cache, v_cache, out, shape, i, h);
    case Isa::kScalar:
    case Isa::kAuto:
      return ref::attention_query(q, k_cache, v_cache, out, shape, i, h);
  }
}

void gated_delta_head(const GatedDeltaInputs& in, float* state_j, float* out,
                      const GatedDeltaShape& shape, std::int64_t j, Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return gated_delta_head_avx512(in, state_j, out, shape, j);
    case Isa::kAvx2:
      return gated_delta_head_avx2(in, state_j, out, shape, j);
    case Isa::kScalar:
    case Isa::kAuto:
      return ref::gated_delta_head(in, state_j, out, shape, j);
  }
}

void mamba2_head(const Mamba2Inputs& in, float* state_h, float* y, const Mamba2Shape& shape,
                 std::int64_t h, Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return mamba2_head_avx512(in, state_h, y, shape, h);
    case Isa::kAvx2:
      return mamba2_head_avx2(in, state_h, y, shape, h);
    case Isa::kScalar:
    case Isa::kAuto:
      return ref::mamba2_head(in, state_h, y, shape, h);
  }
}

void rms_norm(const float* x, const float* w, float* y, const RowsShape& shape, float eps,
              NormWeight kind, Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return rms_norm_avx512(x, w, y, shape, eps, kind);
    case Isa::kAvx2:
      return rms_norm_avx2(x, w, y, shape, eps, kind);
    case Isa::kScalar:
    case Isa::kAuto:
      return ref::rms_norm(x, w, y, shape, eps, kind);
  }
}

}  // namespace recur::kernels::detail
