// matmul's parallel split (kernels.h matmul_fused): each weight's kind picks a path of the active
// KernelTable, the activations are prepared once per path, and every output's blocks run on the
// pool. Work is split over output columns and rows, never over the reduction.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "util/stage_times.h"

namespace recur::kernels::detail {
namespace {

// Streaming calls (decode) read every weight once from memory, and a thread's reads stream best
// as one long run of consecutive rows (the prefetch runs ahead of it; on the dev VM a 4096-row
// matrix read 23.7 GB/s in 256-row tasks, 28.0 in 1024-row tasks): each thread owns one
// contiguous range of kStreamChunk-row chunks, read front to back, and a thread done with its own
// range takes chunks from the back of the fullest other one, so none waits on a slower thread
// (one descheduled by the host, or fed less bandwidth) for more than a chunk.
constexpr std::int64_t kStreamChunk = 128;  // 256 KiB at K 1024; a multiple of every tile grid

struct FusedPart {
  MatmulOperands op;
  MatmulBlockFn fn = nullptr;
  std::int64_t block_n = 0;
  std::int64_t block_m = kMatmulBlockM;
  std::int64_t m_blocks = 0;
  std::int64_t first_task = 0;  // tasks [first_task, first_task + m_blocks * n_blocks)
};

// The part holding flat task / chunk index i (parts are in order of first_task; a grouped call
// has hundreds of them, so a binary search).
const FusedPart& part_of(const FusedPart* parts, std::size_t n_parts, std::int64_t i) {
  const FusedPart* p =
      std::upper_bound(parts, parts + n_parts, i,
                       [](std::int64_t t, const FusedPart& q) { return t < q.first_task; });
  return *(p - 1);
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

// Streaming calls, and grouped calls whose every part's tasks span all its rows (an MoE prefill's
// experts): parts' first_task / m_blocks count chunks of p.block_n output columns (m_blocks == 1).
// A grouped prefill gets the same contiguous ranges as decode, so that each thread's next task is
// the next block of the weight it is reading: the 9-23-row tiles request it ahead
// (matmul_avx512.cc run_block_next), and every kernel's stream runs on across tasks (Qwen3-Next's
// expert geometry in moe_bench, Zen 5 VM, one run: 10 / 12 rows per expert 1.18x / 1.41x with
// the ranges, 0.94x / 1.13x with run_block_next alone; q4 experts 1.2-1.35x with both).
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
    const std::int64_t n0 = (c - p.first_task) * p.block_n;
    const std::int64_t n1 = std::min(p.op.w.rows, n0 + p.block_n);
    const void* next = nullptr;
    if (n1 < p.op.w.rows) {
      next = p.op.w.slice_rows(n1, 0).data;
    } else if (c + 1 < n_chunks) {
      next = part_of(parts, n_parts, c + 1).op.w.data;
    }
    p.fn(p.op, MatmulBlock{.m0 = 0, .m1 = p.op.n_rows, .n0 = n0, .n1 = n1, .next = next});
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

// The prepared activations of the calling (engine) thread's call, all of them in one buffer that
// grows to the largest call, then is reused.
std::uint8_t* prepared_scratch(std::int64_t bytes) {
  thread_local std::vector<std::uint8_t> buf;
  if (static_cast<std::int64_t>(buf.size()) < bytes) buf.resize(static_cast<std::size_t>(bytes));
  return buf.data();
}

// The path of the active table that runs weight w in this call.
const MatmulPath& matmul_path(const KernelTable& t, const WeightView& w, bool lanes_call) {
  if (w.quantized()) return t.matmul_quant;
  switch (w.dtype) {
    case DType::kF32:
      return t.matmul_f32;
    case DType::kF16:
      return t.matmul_f16;
    case DType::kBF16:
      return lanes_call && t.matmul_bf16_lanes.block != nullptr ? t.matmul_bf16_lanes
                                                                : t.matmul_bf16;
  }
  return t.matmul_f32;
}

// Whether group g's bf16 outputs take the lanes path. A grouped call's parts of 17-23 rows
// (an MoE prefill's experts) stay on the tiles where the bf16 path streams that many
// (MatmulPath::stream_rows): their second 16-row lane group would be mostly padding. Experts of
// R rows in moe_bench, AVX-512, Zen 5 VM, tiles against lanes: 16 rows 0.86-0.89x, 20 rows
// 1.0-1.2x, 24 rows 1.0-1.06x, 30 rows 0.78-0.87x.
bool lanes_call(const MatmulGroup& g, const KernelTable& table, bool grouped) {
  std::int64_t bf16_cols = 0;
  for (const MatmulOut& o : g.outs) {
    bf16_cols += o.w.dtype == DType::kBF16 && !o.w.quantized() ? o.w.rows : 0;
  }
  if (grouped && g.n_rows > kLanesRows && g.n_rows < kLanesRows * 3 / 2 &&
      g.n_rows <= table.matmul_bf16.stream_rows) {
    return false;
  }
  return g.n_rows >= kLanesRows && bf16_cols >= kLanesMinCols;
}

// Where each group's activation rows are read: groups with MatmulGroup::rows stay indexed into
// their x when every path their outputs take reads rows through ActivationRows::row(); the others
// are gathered here first (a path that packs several rows at a stride, or reads x in its block).
// Returns x per group and its row ids (null: consecutive rows).
void resolve_rows(ThreadPool& pool, const KernelTable& table, std::span<const MatmulGroup> groups,
                  std::vector<const float*>* xs, std::vector<const std::int32_t*>* ids) {
  thread_local std::vector<float> gathered;
  thread_local std::vector<std::pair<std::size_t, std::int64_t>> tasks;  // (group, first row)
  xs->clear();
  ids->clear();
  tasks.clear();
  thread_local std::vector<std::int64_t> offset_of;
  offset_of.assign(groups.size(), -1);
  std::int64_t floats = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const MatmulGroup& g = groups[i];
    xs->push_back(g.x);
    ids->push_back(g.rows);
    if (g.rows == nullptr || g.n_rows == 0) continue;
    const bool lanes = lanes_call(g, table, groups.size() > 1);
    bool indexed = true;
    for (const MatmulOut& o : g.outs) {
      indexed = indexed && (o.w.rows == 0 || matmul_path(table, o.w, lanes).indexed_rows);
    }
    if (indexed) continue;
    offset_of[i] = floats;
    floats += g.n_rows * g.outs[0].w.cols;
    for (std::int64_t r = 0; r < g.n_rows; r += kPrepRows) tasks.emplace_back(i, r);
  }
  if (tasks.empty()) return;
  if (static_cast<std::int64_t>(gathered.size()) < floats) {
    gathered.resize(static_cast<std::size_t>(floats));
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (offset_of[i] < 0) continue;
    (*xs)[i] = gathered.data() + offset_of[i];
    (*ids)[i] = nullptr;
  }
  // The tasks read the caller's thread_locals through these (a worker's own are empty).
  float* const out = gathered.data();
  const std::span<const std::pair<std::size_t, std::int64_t>> todo(tasks);
  const std::span<const std::int64_t> at(offset_of);
  pool.run(todo.size(), [&](std::size_t t) {
    const auto [i, r0] = todo[t];
    const MatmulGroup& g = groups[i];
    const std::int64_t k = g.outs[0].w.cols;
    for (std::int64_t r = r0; r < std::min(g.n_rows, r0 + kPrepRows); ++r) {
      std::memcpy(out + at[i] + r * k, g.x + static_cast<std::int64_t>(g.rows[r]) * k,
                  static_cast<std::size_t>(k) * sizeof(float));
    }
  });
}

// One group's activations in the layout of one path (and quantization group size).
struct Prepared {
  const MatmulPath* path = nullptr;
  ActivationRows rows;
  std::int64_t offset = 0;       // into the call's prepared_scratch
  std::int64_t first_block = 0;  // its kPrepRows-row blocks in the call's preparation run
  std::int64_t source = -1;      // >= 0: its rows are copied from this SharedRows entry
};

// x's rows [0, n_rows) quantized once for the groups that pick rows of it.
struct SharedRows {
  ActivationRows rows;
  const MatmulPath* path = nullptr;
  std::int64_t offset = 0;
  std::int64_t first_block = 0;
};

// Entries of `prepared` that pick rows of one x for the same row-wise quantized layout share one
// quantization of x's rows up to the largest id: an MoE layer's experts hold each token top-k
// times (Qwen3-Next: 10), and quantizing a row (a maximum and a sum per group) costs several times
// copying it. Only where the copies are fewer rows than the groups hold. Sets each sharing entry's
// source (-2: looked at, not shared) and adds the sources' bytes and preparation blocks to *bytes
// and *n_blocks.
void share_quantized_rows(std::vector<Prepared>& prepared, std::vector<SharedRows>& shared,
                          std::int64_t* bytes, std::int64_t* n_blocks) {
  shared.clear();
  const auto same_rows = [](const Prepared& p, const Prepared& q) {
    return q.path == p.path && q.rows.x == p.rows.x && q.rows.row_ids != nullptr &&
           q.rows.k_dim == p.rows.k_dim && q.rows.group_size == p.rows.group_size;
  };
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const Prepared& p = prepared[i];
    if (p.source != -1 || p.rows.row_ids == nullptr || !p.path->rowwise_quantized) continue;
    std::int64_t picked = 0, n_src = 0, members = 0;
    for (std::size_t j = i; j < prepared.size(); ++j) {
      const Prepared& q = prepared[j];
      if (!same_rows(p, q)) continue;
      ++members;
      picked += q.rows.n_rows;
      for (std::int64_t r = 0; r < q.rows.n_rows; ++r) {
        n_src = std::max<std::int64_t>(n_src, q.rows.row_ids[r] + 1);
      }
    }
    const bool share = members >= 2 && picked > n_src;
    const auto index = static_cast<std::int64_t>(shared.size());
    if (share) {
      const ActivationRows all{
          .x = p.rows.x, .n_rows = n_src, .k_dim = p.rows.k_dim, .group_size = p.rows.group_size};
      shared.push_back({.rows = all, .path = p.path, .offset = *bytes, .first_block = *n_blocks});
      *bytes += (p.path->x_bytes(all) + 63) / 64 * 64;
      *n_blocks += (n_src + kPrepRows - 1) / kPrepRows;
    }
    const Prepared key = p;  // p is one of the entries rewritten below
    for (std::size_t j = i; j < prepared.size(); ++j) {
      if (same_rows(key, prepared[j])) prepared[j].source = share ? index : -2;
    }
  }
}

// Rows [r0, r1) of p (picked by id) copied from its source's quantized rows: the bytes its own
// prepare_x would write, since a row's quantization reads that row alone.
void copy_quantized_rows(const Prepared& p, const SharedRows& s, std::uint8_t* buf, std::int64_t r0,
                         std::int64_t r1) {
  const std::int64_t k = p.rows.k_dim, groups = k / p.rows.group_size;
  const QuantizedActivations from =
      quantized_rows_view(buf + s.offset, s.rows.n_rows, k, p.rows.group_size);
  const QuantizedActivations to =
      quantized_rows_view(buf + p.offset, p.rows.n_rows, k, p.rows.group_size);
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t id = p.rows.row_ids[r];
    std::memcpy(to.q + r * k, from.q + id * k, static_cast<std::size_t>(k));
    std::memcpy(to.d + r * groups, from.d + id * groups, static_cast<std::size_t>(groups) * 4);
    std::memcpy(to.xsum + r * groups, from.xsum + id * groups,
                static_cast<std::size_t>(groups) * 4);
  }
}

}  // namespace

// Its own buffer: the calling thread also runs tasks, and its prepared_scratch holds the packed
// activations they read.
float* lanes_weight_scratch(std::int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<std::int64_t>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

void matmul_dispatch(ThreadPool& pool, std::span<const MatmulGroup> groups) {
  const KernelTable& table = active_kernels();
  if (stages::enabled()) {
    double flops = 0;
    for (const MatmulGroup& g : groups) {
      for (const MatmulOut& o : g.outs) {
        flops += 2.0 * static_cast<double>(g.n_rows) * static_cast<double>(o.w.rows) *
                 static_cast<double>(o.w.cols);
      }
    }
    stages::add_flops(flops);
  }
  // Grown once to the largest call, like the prepared activations: no allocation per step after.
  thread_local std::vector<Prepared> prepared;
  thread_local std::vector<SharedRows> shared;
  thread_local std::vector<FusedPart> parts;
  thread_local std::vector<std::size_t> part_prep;  // parts[i]'s entry of `prepared`
  thread_local std::vector<const float*> group_x;
  thread_local std::vector<const std::int32_t*> group_ids;
  prepared.clear();
  parts.clear();
  part_prep.clear();
  resolve_rows(pool, table, groups, &group_x, &group_ids);
  bool streaming = true;
  for (const MatmulGroup& g : groups) streaming = streaming && g.n_rows <= kStreamRows;
  std::int64_t n_tasks = 0, bytes = 0, n_blocks = 0;
  bool all_rows = true;  // every part's tasks span all its rows
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const MatmulGroup& g = groups[gi];
    if (g.n_rows == 0) continue;
    const float* const x = group_x[gi];
    const std::int32_t* const row_ids = group_ids[gi];
    const bool lanes = lanes_call(g, table, groups.size() > 1);
    const std::size_t group_first = prepared.size();
    for (const MatmulOut& o : g.outs) {
      if (o.w.rows == 0) continue;
      const MatmulPath& path = matmul_path(table, o.w, lanes);
      // The activations of each distinct (path, quantization group) of a group are prepared once
      // for all the outputs that read them.
      std::size_t prep = prepared.size();
      for (std::size_t i = group_first; i < prepared.size(); ++i) {
        if (prepared[i].path == &path && prepared[i].rows.group_size == o.w.group_size) prep = i;
      }
      if (prep == prepared.size()) {
        const ActivationRows rows{.x = x,
                                  .n_rows = g.n_rows,
                                  .k_dim = o.w.cols,
                                  .group_size = o.w.group_size,
                                  .row_ids = row_ids};
        prepared.push_back({.path = &path, .rows = rows, .offset = bytes, .first_block = n_blocks});
        if (path.prepare_x != nullptr) {
          bytes += (path.x_bytes(rows) + 63) / 64 * 64;
          n_blocks += (g.n_rows + kPrepRows - 1) / kPrepRows;
        }
      }
      FusedPart& p = parts.emplace_back();
      part_prep.push_back(prep);
      p.op = {.x = row_ids == nullptr ? x : nullptr,  // indexed paths read only xp
              .xp = nullptr,
              .w = o.w,
              .y = o.y,
              .n_rows = g.n_rows,
              .scattered = streaming && groups.size() > 1};
      p.fn = path.block;
      const bool small =
          g.n_rows <= kStreamRows || (groups.size() > 1 && g.n_rows <= path.stream_rows);
      p.block_n = small ? kStreamChunk : path.block_n;
      const std::int64_t col_blocks = (o.w.rows + p.block_n - 1) / p.block_n;
      p.block_m = small                                ? g.n_rows
                  : col_blocks >= 4 * pool.n_threads() ? path.wide_block_m
                                                       : kMatmulBlockM;
      p.m_blocks = (g.n_rows + p.block_m - 1) / p.block_m;
      all_rows = all_rows && p.m_blocks == 1;
      p.first_task = n_tasks;
      n_tasks += p.m_blocks * col_blocks;
    }
  }
  if (parts.empty()) return;
  // The copies' own blocks stay where they are in the run; the sources' go after them and run
  // first, in a run of their own.
  const std::int64_t copy_blocks = n_blocks;
  share_quantized_rows(prepared, shared, &bytes, &n_blocks);
  std::uint8_t* buf = prepared_scratch(bytes);
  if (n_blocks > 0) {
    // Every group's preparation in one run, kPrepRows rows per task (it is a tenth of a large
    // matmul's time; done by one thread it would cap the speed-up).
    // prepared and shared are the caller's thread_locals: the tasks must not name them (a
    // worker's are empty).
    const std::span<const Prepared> preps(prepared);
    const std::span<const SharedRows> sources(shared);
    const stages::Scope stage("prepare_x");
    if (!sources.empty()) {
      pool.run(static_cast<std::size_t>(n_blocks - copy_blocks), [&](std::size_t task) {
        const auto b = static_cast<std::int64_t>(task) + copy_blocks;
        const SharedRows& s = *(std::upper_bound(sources.begin(), sources.end(), b,
                                                 [](std::int64_t t, const SharedRows& q) {
                                                   return t < q.first_block;
                                                 }) -
                                1);
        const std::int64_t r0 = (b - s.first_block) * kPrepRows;
        s.path->prepare_x(s.rows, r0, std::min(s.rows.n_rows, r0 + kPrepRows), buf + s.offset);
      });
    }
    pool.run(static_cast<std::size_t>(copy_blocks), [&](std::size_t task) {
      const auto b = static_cast<std::int64_t>(task);
      // The last entry starting at or before b: entries without preparation own no blocks, and
      // one starting where another does precedes it.
      const Prepared& p =
          *(std::upper_bound(preps.begin(), preps.end(), b,
                             [](std::int64_t t, const Prepared& q) { return t < q.first_block; }) -
            1);
      const std::int64_t r0 = (b - p.first_block) * kPrepRows;
      const std::int64_t r1 = std::min(p.rows.n_rows, r0 + kPrepRows);
      if (p.source >= 0) {
        copy_quantized_rows(p, sources[static_cast<std::size_t>(p.source)], buf, r0, r1);
      } else {
        p.path->prepare_x(p.rows, r0, r1, buf + p.offset);
      }
    });
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Prepared& p = prepared[part_prep[i]];
    if (p.path->prepare_x != nullptr) parts[i].op.xp = buf + p.offset;
  }
  if (streaming || (groups.size() > 1 && all_rows)) {
    for (FusedPart& p : parts) p.op.ranged = true;
    run_parts_streaming(pool, parts.data(), parts.size(), n_tasks);
  } else {
    run_parts(pool, parts.data(), parts.size(), n_tasks);
  }
}

}  // namespace recur::kernels::detail
