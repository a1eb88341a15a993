// Machine ceilings and matmul timings (bench.h). Probes run on every pool thread at once.
#include "kernels/bench.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/peak_loops.h"
#include "kernels/quant.h"

namespace recur::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// FLOP/s of `loop` on all threads: repetitions of about 2 ms (calibrated on one thread) for
// 3 x `seconds`, the best kept. Short repetitions, like single matmul calls, fit between the
// scheduler's interruptions on a shared machine, so ceilings and timings see the same conditions.
double measure_peak(ThreadPool& pool, double (*loop)(std::int64_t), double seconds) {
  std::int64_t iters = 1 << 10;
  for (;;) {
    const auto t0 = Clock::now();
    loop(iters);
    const double dt = seconds_since(t0);
    if (dt > 0.02) {
      iters = static_cast<std::int64_t>(static_cast<double>(iters) * 0.002 / dt) + 1;
      break;
    }
    iters *= 4;
  }
  const auto n = static_cast<std::size_t>(pool.n_threads());
  double best = 0;
  const auto start = Clock::now();
  for (int rep = 0; rep < 20 || seconds_since(start) < 3 * seconds; ++rep) {
    std::vector<double> flops(n, 0.0);
    const auto t0 = Clock::now();
    pool.run(n, [&](std::size_t i) { flops[i] = loop(iters); });
    const double dt = seconds_since(t0);
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / dt);
  }
  return best;
}

// Four independent sums over a share of the buffer; kL2 also requests each line kL2Ahead bytes
// ahead into L2, kL2L1 that and the line kL1Ahead bytes ahead into L1. On the Xeon VM the L2
// pass read 25-30 GB/s against 22-23 for the plain one (8-64 KiB ahead alike; 1 KiB was
// slower), and the decode GEMVs that prefetch into L1 too read faster than the L2 pass: a ceiling
// must take the fastest.
constexpr std::int64_t kL2Ahead = std::int64_t{32} << 10;
constexpr std::int64_t kL1Ahead = 4096;

template <ReadMode M>
std::uint64_t sum_words(const std::uint64_t* p, std::int64_t n) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const char* here = reinterpret_cast<const char*>(p + i);
    if (M != ReadMode::kPlain && i + kL2Ahead / 8 < n) _mm_prefetch(here + kL2Ahead, _MM_HINT_T1);
    if (M == ReadMode::kL2L1 && i + kL1Ahead / 8 < n) _mm_prefetch(here + kL1Ahead, _MM_HINT_T0);
    a += p[i] + p[i + 4];
    b += p[i + 1] + p[i + 5];
    c += p[i + 2] + p[i + 6];
    d += p[i + 3] + p[i + 7];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

std::uint64_t sum_words(ReadMode m, const std::uint64_t* p, std::int64_t n) {
  switch (m) {
    case ReadMode::kPlain:
      return sum_words<ReadMode::kPlain>(p, n);
    case ReadMode::kL2:
      return sum_words<ReadMode::kL2>(p, n);
    case ReadMode::kL2L1:
      return sum_words<ReadMode::kL2L1>(p, n);
  }
  return 0;
}

double measure_read_bandwidth(ThreadPool& pool, std::int64_t bytes, double seconds,
                              ReadMode* mode) {
  ReadProbe probe(bytes);
  probe.calibrate(pool);
  *mode = probe.mode();
  double best = 0;
  const auto start = Clock::now();
  for (std::int64_t rep = 0; rep < 8 || seconds_since(start) < 3 * seconds; ++rep) {
    best = std::max(best, probe.pass(pool));
  }
  return best;
}

// Deterministic pseudo-random bf16 in [-1, 1) without a slow engine (weights are up to 500 MB).
void fill_bf16(std::uint16_t* p, std::int64_t n, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (std::int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>(static_cast<std::int64_t>(s >> 40) - (1 << 23)) / (1 << 23);
    p[i] = f32_to_bf16(f);
  }
}

}  // namespace

const char* read_mode_name(ReadMode m) {
  switch (m) {
    case ReadMode::kPlain:
      return "hardware prefetch";
    case ReadMode::kL2:
      return "software prefetch into L2";
    case ReadMode::kL2L1:
      return "software prefetch into L2 and L1";
  }
  return "?";
}

ReadProbe::ReadProbe(std::int64_t bytes) : words_(static_cast<std::size_t>(bytes / 8)) {
  for (std::size_t i = 0; i < words_.size(); ++i) words_[i] = i;
}

// Each thread reads one contiguous share with 4 independent sums, in the calibrated mode (on the
// Zen 4 VM the plain pass, faster than software prefetch 32-256 KiB ahead or 512-bit loads; on the
// Xeon VM a prefetching one).
// Whole passes: windows shorter than a decode step (the first version timed 64 MiB windows) catch
// short bursts of the host's memory system and overstated the sustained rate.
double ReadProbe::pass(ThreadPool& pool) {
  const auto n = static_cast<std::int64_t>(pool.n_threads());
  const auto n_words = static_cast<std::int64_t>(words_.size());
  sinks_.resize(static_cast<std::size_t>(n));
  const auto t0 = Clock::now();
  pool.run(static_cast<std::size_t>(n), [&](std::size_t s) {
    const std::int64_t begin = n_words * static_cast<std::int64_t>(s) / n;
    const std::int64_t end = n_words * static_cast<std::int64_t>(s + 1) / n;
    const std::uint64_t* p = words_.data() + begin;
    sinks_[s] += sum_words(mode_, p, end - begin);
  });
  const double dt = seconds_since(t0);
  __asm__ volatile("" : : "r"(sinks_.data()) : "memory");
  return static_cast<double>(bytes()) / dt;
}

void ReadProbe::calibrate(ThreadPool& pool) {
  constexpr ReadMode kModes[] = {ReadMode::kPlain, ReadMode::kL2, ReadMode::kL2L1};
  double best[3] = {0, 0, 0};
  for (int round = 0; round < 3; ++round) {  // the first round also pages the buffer in
    for (int m = 0; m < 3; ++m) {
      mode_ = kModes[m];
      best[m] = std::max(best[m], pass(pool));
    }
  }
  mode_ = kModes[std::max_element(best, best + 3) - best];
}

Ceilings measure_ceilings(ThreadPool& pool, double seconds) {
  Ceilings c;
  c.n_threads = pool.n_threads();
  // The probes of the active ISA's instructions only (each takes three times `seconds`).
  c.isa = active_isa();
  if (c.isa == Isa::kAvx2 || c.isa == Isa::kAvx2Vnni) {
    c.avx2_f32_flops = measure_peak(pool, detail::peak_loop_avx2_f32, seconds);
  }
  if (c.isa == Isa::kAvx2) {
    c.avx2_int8_ops = measure_peak(pool, detail::peak_loop_avx2_int8, seconds);
  }
  if (c.isa == Isa::kAvx2Vnni) {
    c.avxvnni_int8_ops = measure_peak(pool, detail::peak_loop_avxvnni_int8, seconds);
  }
  if (c.isa == Isa::kAvx512 || c.isa == Isa::kAmx) {
    c.avx512_bf16_flops = measure_peak(pool, detail::peak_loop_avx512_bf16, seconds);
    c.avx512_int8_ops = measure_peak(pool, detail::peak_loop_avx512_int8, seconds);
  }
  if (c.isa == Isa::kAmx) {
    c.amx_bf16_flops = measure_peak(pool, detail::peak_loop_amx_bf16, seconds);
    c.amx_int8_ops = measure_peak(pool, detail::peak_loop_amx_int8, seconds);
  }
  c.buffer_bytes = std::int64_t{512} << 20;  // well past any LLC of a 2-64 core part
  ReadMode mode = ReadMode::kPlain;
  c.read_bytes_per_s = measure_read_bandwidth(pool, c.buffer_bytes, seconds, &mode);
  c.read_mode = read_mode_name(mode);
  return c;
}

std::vector<MatmulShape> qwen35_08b_shapes() {
  return {
      {"attn q_proj (q+gate)", 4096, 1024},
      {"attn k_proj / v_proj", 512, 1024},
      {"attn o_proj", 1024, 2048},
      {"gdn in_proj_qkv", 6144, 1024},
      {"gdn in_proj_z", 2048, 1024},
      {"gdn in_proj_a / b", 16, 1024},
      {"gdn out_proj", 1024, 2048},
      {"mlp gate / up", 3584, 1024},
      {"mlp down", 1024, 3584},
      {"lm_head (tied)", 248320, 1024},
  };
}

MatmulBench::MatmulBench(const MatmulShape& shape, std::int64_t n_rows, int bits, int group_size,
                         QuantCodes codes)
    : n_rows_(n_rows) {
  w_ = WeightView{.dtype = DType::kBF16, .rows = shape.n_out, .cols = shape.k_dim};
  if (codes == QuantCodes::kMxfp4) {
    w_ = mxfp4_packed_view(shape.n_out, shape.k_dim, nullptr);
    bits = w_.bits;
    group_size = w_.group_size;
  } else if (bits != 0) {
    w_.bits = bits;
    w_.group_size = group_size;
  }
  const std::int64_t w_bytes = w_.total_bytes();
  // Rotate over copies totalling >= 128 MiB so the weights come from memory as in a real
  // decode step (a 2 MB matrix would otherwise sit in the LLC).
  copies_ = std::max<std::int64_t>(1, (std::int64_t{128} << 20) / w_bytes);
  // Distinct contents per copy: identical pages may be merged by the host (KSM on a VM), which
  // put the "rotated" copies of matrices under 12 MB in cache (decode GEMVs at 130-300% of the
  // read bandwidth in earlier versions of this benchmark). Quantized copies get random codes and
  // then scales and biases of a real weight's size.
  // On cache lines, as the loader places quantized weights (model.cc).
  buf_.resize(static_cast<std::size_t>((w_bytes * copies_ + 1) / 2 + 32));
  base_ = reinterpret_cast<std::uint8_t*>(buf_.data());
  base_ += (64 - reinterpret_cast<std::uintptr_t>(base_) % 64) % 64;
  fill_bf16(reinterpret_cast<std::uint16_t*>(base_), w_bytes * copies_ / 2, 1);
  if (bits != 0) {
    const std::int64_t code_bytes = kQuantBlockRows * group_size * bits / 8;
    for (std::int64_t rec = 0; rec < w_bytes * copies_ / w_.group_record_bytes(); ++rec) {
      auto* params =
          reinterpret_cast<std::uint16_t*>(base_ + rec * w_.group_record_bytes() + code_bytes);
      fill_bf16(params, 2 * kQuantBlockRows, static_cast<std::uint64_t>(rec + 2));
      for (std::int64_t i = 0; i < 2 * kQuantBlockRows; ++i) {
        params[i] = f32_to_bf16(bf16_to_f32(params[i]) / 64);
      }
      if (codes == QuantCodes::kMxfp4) {  // MXFP4's scales 2^(e − 128), e in 118 .. 133
        for (std::int64_t i = 0; i < kQuantBlockRows; ++i) {
          const float s = std::ldexp(1.0f, static_cast<int>(params[i] % 16) - 10);
          params[i] = f32_to_bf16(s);
          params[kQuantBlockRows + i] = f32_to_bf16(-12.0f * s);
        }
      }
    }
  }
  x_.resize(static_cast<std::size_t>(n_rows * shape.k_dim));
  for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
  y_.resize(static_cast<std::size_t>(n_rows * shape.n_out));
}

MatmulTiming MatmulBench::run(ThreadPool& pool, double seconds) {
  const std::int64_t w_bytes = w_.total_bytes();
  auto view = [&](std::int64_t c) {
    WeightView v = w_;
    v.data = base_ + c * w_bytes;
    return v;
  };
  matmul(pool, x_.data(), n_rows_, view(0), y_.data());  // warm-up (scratch, page faults)
  double best = 1e30;
  std::int64_t calls = 0;
  const auto t0 = Clock::now();
  do {
    const auto t1 = Clock::now();
    matmul(pool, x_.data(), n_rows_, view(calls % copies_), y_.data());
    best = std::min(best, seconds_since(t1));
    ++calls;
  } while (seconds_since(t0) < seconds || calls < 3);
  MatmulTiming t;
  t.seconds = best;
  t.flops_per_s = 2.0 * static_cast<double>(n_rows_ * w_.rows * w_.cols) / best;
  t.bytes_per_s = static_cast<double>(w_bytes) / best;
  t.mean_bytes_per_s = static_cast<double>(w_bytes * calls) / seconds_since(t0);
  return t;
}

MatmulTiming time_matmul(ThreadPool& pool, const MatmulShape& shape, std::int64_t n_rows,
                         double seconds, int bits, int group_size, QuantCodes codes) {
  MatmulBench bench(shape, n_rows, bits, group_size, codes);
  return bench.run(pool, seconds);
}

std::vector<AttentionBenchShape> decode_attention_shapes() {
  return {{"qwen3-0.6b", 16, 8, 128}, {"qwen3.5-0.8b", 8, 2, 256}};
}

AttentionTiming time_decode_attention(ThreadPool& pool, const AttentionBenchShape& shape,
                                      std::int64_t n_keys, std::int64_t n_seqs,
                                      std::int64_t n_layers, bool head_major, double seconds) {
  const std::int64_t cache_elems = n_keys * shape.n_kv_heads * shape.head_dim;
  const std::int64_t n_caches = n_seqs * n_layers;
  std::vector<std::uint16_t> k(static_cast<std::size_t>(cache_elems * n_caches));
  std::vector<std::uint16_t> v(k.size());
  fill_bf16(k.data(), static_cast<std::int64_t>(k.size()), 1);
  fill_bf16(v.data(), static_cast<std::int64_t>(v.size()), 2);
  const std::int64_t q_elems = shape.n_heads * shape.head_dim;
  std::vector<float> q(static_cast<std::size_t>(q_elems * n_caches));
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 89) / 89.0f - 0.5f;
  std::vector<float> out(q.size());
  AttentionShape s;
  s.n_q = 1;
  s.pos0 = n_keys - 1;
  s.n_kv = n_keys;
  s.n_heads = shape.n_heads;
  s.n_kv_heads = shape.n_kv_heads;
  s.head_dim = shape.head_dim;
  s.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  s.kv_dtype = DType::kBF16;
  if (head_major) {
    s.kv_token_stride = shape.head_dim;
    s.kv_head_stride = n_keys * shape.head_dim;
  }
  std::vector<AttentionJob> jobs(static_cast<std::size_t>(n_seqs));
  const auto step = [&] {
    for (std::int64_t layer = 0; layer < n_layers; ++layer) {
      for (std::int64_t seq = 0; seq < n_seqs; ++seq) {
        const std::int64_t c = layer * n_seqs + seq;
        jobs[static_cast<std::size_t>(seq)] = {q.data() + c * q_elems, k.data() + c * cache_elems,
                                               v.data() + c * cache_elems, out.data() + c * q_elems,
                                               s};
      }
      attention_batch(pool, jobs);
    }
  };
  step();  // warm-up (page faults)
  double best = 1e30;
  std::int64_t steps = 0;
  const auto t0 = Clock::now();
  do {
    const auto t1 = Clock::now();
    step();
    best = std::min(best, seconds_since(t1));
    ++steps;
  } while (seconds_since(t0) < seconds || steps < 3);
  AttentionTiming t;
  t.seconds = best;
  t.bytes_per_s = 2.0 * 2.0 * static_cast<double>(cache_elems * n_caches) / best;
  return t;
}

}  // namespace recur::kernels
