// Per-ISA selection for the kernels with vector paths: matmul, attention and the recurrences.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
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
// The lanes kernel's micro-tile is 64 rows x 6 weight rows: blocks of 16 such tiles.
constexpr std::int64_t kLanesBlockN = 96;
// The AVX2 lanes kernel widens a task's weight rows to f32 once per task: where there are enough
// column blocks to keep every thread busy, tasks span up to 256 rows, so a 512-row call widens
// each weight block twice instead of eight times (512 rows: 1.02-1.07x on the Xeon VM).
constexpr std::int64_t kLanesAvx2BlockM = 256;

// Streaming calls (decode) read every weight once from memory, and a thread's reads stream best
// as one long run of consecutive rows (the prefetch runs ahead of it; on the dev VM a 4096-row
// matrix read 23.7 GB/s in 256-row tasks, 28.0 in 1024-row tasks): each thread owns one
// contiguous range of kStreamChunk-row chunks, read front to back, and a thread done with its own
// range takes chunks from the back of the fullest other one, so none waits on a slower thread
// (one descheduled by the host, or fed less bandwidth) for more than a chunk.
constexpr std::int64_t kStreamChunk = 128;  // 256 KiB at K 1024; a multiple of every tile grid

using BlockFn = void (*)(const MatmulOperands&, const MatmulBlock&);

struct FusedPart {
  MatmulOperands op;
  BlockFn fn = nullptr;
  std::int64_t block_n = 0;
  std::int64_t block_m = kBlockM;
  std::int64_t m_blocks = 0;
  std::int64_t first_task = 0;  // tasks [first_task, first_task + m_blocks * n_blocks)
};

// The part holding flat task / chunk index i (parts are in order of first_task).
const FusedPart& part_of(const FusedPart* parts, std::size_t n_parts, std::int64_t i) {
  std::size_t p = n_parts - 1;
  while (i < parts[p].first_task) --p;
  return parts[p];
}

void run_parts(ThreadPool& pool, const FusedPart* parts, std::size_t n_parts,
               std::int64_t n_tasks) {
  pool.run(static_cast<std::size_t>(n_tasks), [&](std::size_t task) {
    const FusedPart& p = part_of(parts, n_parts, static_cast<std::int64_t>(task));
    const std::int64_t t = static_cast<std::int64_t>(task) - p.first_task;
    const std::int64_t mb = t % p.m_blocks, nb = t / p.m_blocks;
    const MatmulBlock b{.m0 = mb * p.block_m,
                        .m1 = std::min(p.op.n_rows, (mb + 1) * p.block_m),
                        .n0 = nb * p.block_n,
                        .n1 = std::min(p.op.w.rows, (nb + 1) * p.block_n)};
    p.fn(p.op, b);
  });
}

// One thread's range of chunks [front, back), both in one word so that the owner taking the
// front and a thief taking the back can never both get the last chunk.
struct alignas(64) ChunkRange {
  std::atomic<std::uint64_t> span{0};
  static std::uint64_t pack(std::uint32_t front, std::uint32_t back) {
    return static_cast<std::uint64_t>(front) << 32 | back;
  }
  static std::int64_t left(std::uint64_t s) {
    return static_cast<std::int64_t>(s & 0xffffffffu) - static_cast<std::int64_t>(s >> 32);
  }
  // The front (owner) or back (thief) chunk, or -1 when the range is empty.
  std::int64_t take(bool from_back) {
    std::uint64_t s = span.load(std::memory_order_relaxed);
    for (;;) {
      const auto front = static_cast<std::uint32_t>(s >> 32);
      const auto back = static_cast<std::uint32_t>(s);
      if (front >= back) return -1;
      const std::uint64_t next = from_back ? pack(front, back - 1) : pack(front + 1, back);
      if (span.compare_exchange_weak(s, next, std::memory_order_relaxed)) {
        return from_back ? back - 1 : front;
      }
    }
  }
};

// Ranges of the calling (engine) thread's streaming calls: sized once for the pool.
ChunkRange* chunk_ranges(int n) {
  thread_local std::unique_ptr<ChunkRange[]> ranges;
  thread_local int size = 0;
  if (size < n) {
    ranges = std::make_unique<ChunkRange[]>(static_cast<std::size_t>(n));
    size = n;
  }
  return ranges.get();
}

// Streaming calls: parts' first_task / m_blocks count kStreamChunk-row chunks (m_blocks == 1).
void run_parts_streaming(ThreadPool& pool, const FusedPart* parts, std::size_t n_parts,
                         std::int64_t n_chunks) {
  const int n = static_cast<int>(std::min<std::int64_t>(pool.n_threads(), n_chunks));
  ChunkRange* ranges = chunk_ranges(n);
  for (int r = 0; r < n; ++r) {
    ranges[r].span.store(ChunkRange::pack(static_cast<std::uint32_t>(n_chunks * r / n),
                                          static_cast<std::uint32_t>(n_chunks * (r + 1) / n)),
                         std::memory_order_relaxed);
  }
  auto run_chunk = [&](std::int64_t c) {
    const FusedPart& p = part_of(parts, n_parts, c);
    const std::int64_t n0 = (c - p.first_task) * kStreamChunk;
    p.fn(p.op,
         MatmulBlock{
             .m0 = 0, .m1 = p.op.n_rows, .n0 = n0, .n1 = std::min(p.op.w.rows, n0 + kStreamChunk)});
  };
  // pool.run publishes the ranges to the workers (its job hand-off is a release / acquire pair).
  pool.run(static_cast<std::size_t>(n), [&](std::size_t own) {
    for (std::int64_t c; (c = ranges[own].take(false)) >= 0;) run_chunk(c);
    for (;;) {
      int victim = -1;
      std::int64_t most = 0;
      for (int r = 0; r < n; ++r) {
        const std::int64_t l = ChunkRange::left(ranges[r].span.load(std::memory_order_relaxed));
        if (l > most) {
          most = l;
          victim = r;
        }
      }
      if (victim < 0) return;
      if (const std::int64_t c = ranges[victim].take(true); c >= 0) run_chunk(c);
    }
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

// Its own buffer: the calling thread also runs tasks, and its scratch<float> holds the packed
// activations they read.
float* lanes_weight_scratch(std::int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<std::int64_t>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

void matmul_dispatch(ThreadPool& pool, const float* x, std::int64_t n_rows,
                     std::span<const MatmulOut> outs, Isa isa) {
  if (isa == Isa::kScalar || isa == Isa::kAuto) {
    for (const MatmulOut& o : outs) matmul_scalar(pool, x, n_rows, o.w, o.y);
    return;
  }
  const std::int64_t k_dim = outs[0].w.cols;
  const ActivationRows rows{.x = x, .n_rows = n_rows, .k_dim = k_dim};
  std::int64_t bf16_cols = 0;
  for (const MatmulOut& o : outs) bf16_cols += o.w.dtype == DType::kBF16 ? o.w.rows : 0;
  const bool any_bf16 = bf16_cols > 0;
  MatmulOperands base{.x = x, .n_rows = n_rows};
  if (any_bf16) {
    switch (isa) {
      case Isa::kAmx: {
        std::uint16_t* packed = scratch<std::uint16_t>(amx_vnni_elements(n_rows, k_dim));
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t) {
          amx_pack_x_block(rows, r0 / kPrepRows, packed);  // kPrepRows == AMX tile rows
        });
        base.x_vnni = packed;
        break;
      }
      case Isa::kAvx512: {
        if (n_rows >= kLanesRows && bf16_cols >= kLanesMinCols) {
          std::uint16_t* xp = scratch<std::uint16_t>(lanes_x_elements(n_rows, k_dim));
          for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t) {
            pack_x_lanes_avx512(rows, r0 / kPrepRows, xp);  // kPrepRows == 16 rows per group
          });
          base.x_lanes = xp;
          break;
        }
        base.ld_bf16 = (k_dim + 31) / 32 * 32;
        std::uint16_t* xb = scratch<std::uint16_t>(n_rows * base.ld_bf16);
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t r1) {
          to_bf16_rows_avx512(rows, r0, r1, base.ld_bf16, xb);
        });
        base.x_bf16 = xb;
        break;
      }
      case Isa::kAvx2: {
        if (n_rows >= kLanesRows && bf16_cols >= kLanesMinCols) {
          float* xp = scratch<float>(lanes_x_elements_avx2(n_rows, k_dim));
          for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t) {
            pack_x_lanes_avx2(rows, r0 / kPrepRows, xp);  // kPrepRows == 16 rows per block
          });
          base.x_lanes_f32 = xp;
          break;
        }
        float* xr = scratch<float>(n_rows * k_dim);
        for_row_blocks(pool, n_rows, [&](std::int64_t r0, std::int64_t r1) {
          round_rows_avx2(rows, r0, r1, xr);
        });
        base.x_rounded = xr;
        break;
      }
      case Isa::kScalar:
      case Isa::kAuto:
        break;
    }
  }
  std::array<FusedPart, kMaxFusedMatmuls> parts;
  std::size_t n_parts = 0;
  std::int64_t n_tasks = 0;
  for (const MatmulOut& o : outs) {
    if (o.w.rows == 0) continue;
    FusedPart& p = parts[n_parts++];
    p.op = base;
    p.op.w = o.w;
    p.op.y = o.y;
    const bool bf16 = o.w.dtype == DType::kBF16;
    const bool lanes = bf16 && (base.x_lanes != nullptr || base.x_lanes_f32 != nullptr);
    p.fn = isa == Isa::kAvx2            ? (lanes ? matmul_block_lanes_avx2 : matmul_block_avx2)
           : (isa == Isa::kAmx && bf16) ? matmul_block_amx
           : lanes                      ? matmul_block_lanes_avx512
                                        : matmul_block_avx512;
    p.block_n = n_rows <= kStreamRows ? kStreamChunk : lanes ? kLanesBlockN : kBlockN;
    const std::int64_t n_blocks = (o.w.rows + p.block_n - 1) / p.block_n;
    p.block_m =
        lanes && isa == Isa::kAvx2 && n_blocks >= 4 * pool.n_threads() ? kLanesAvx2BlockM : kBlockM;
    p.m_blocks = (n_rows + p.block_m - 1) / p.block_m;
    p.first_task = n_tasks;
    n_tasks += p.m_blocks * n_blocks;
  }
  if (n_parts == 0) return;
  if (n_rows <= kStreamRows) {
    run_parts_streaming(pool, parts.data(), n_parts, n_tasks);
  } else {
    run_parts(pool, parts.data(), n_parts, n_tasks);
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
              Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return rms_norm_avx512(x, w, y, shape, eps);
    case Isa::kAvx2:
      return rms_norm_avx2(x, w, y, shape, eps);
    case Isa::kScalar:
    case Isa::kAuto:
      return ref::rms_norm(x, w, y, shape, eps);
  }
}

}  // namespace recur::kernels::detail
