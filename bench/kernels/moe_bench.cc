// moe_bench: the expert stages of one mixture-of-experts layer on their own (kernels::
// matmul_grouped over the experts a prompt's tokens chose), to find where prefill's time goes
// without the rest of the model. Qwen3-30B-A3B's geometry by default: 128 experts, 8 per token,
// d_model 2048, moe_d_ff 768, bf16 or quantized (MLX affine, bf16 scales) weights distinct per
// layer so every stage reads its experts from memory, as a real prompt does.
//
//   moe_bench [--tokens 512] [--layers 2] [--bits 0|4|8] [--threads N] [--reps 5] [--isa NAME]
//             [--hot 1] [--even 1] [--decode-orders B1,B2,...] [--experts 128] [--top-k 8]
//             [--d-ff 768] [--huge 1]
// --huge 1 places the weights on transparent huge pages (util/page_arena.h), as the engine holds
// quantized weights and as the page cache's large folios map a checkpoint's bf16 ones.
// --experts / --top-k / --d-ff give another model's expert geometry: Qwen3.5-35B-A3B is 256 / 8 /
// 512, Qwen3-Next-80B-A3B 512 / 10 / 512 (their shared expert is a plain matmul, not timed here).
// --decode-orders alternates the 1-8-row calls' read order (kernels_bench --decode-order's bits; -1
// the vendor's) from one repetition to the next and reports each: with --tokens 4 it compares
// decode orders over the same experts in the same minutes (this host's bandwidth wanders).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/bench.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/matmul_grouped.h"
#include "kernels/matmul_isa.h"
#include "kernels/quant.h"
#include "util/page_arena.h"

namespace {

using namespace recur;
using namespace recur::kernels;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kDModel = 2048;

struct Matrix {
  std::vector<std::uint8_t> bytes;
  WeightView view;
};

Matrix make_matrix_in_heap(std::int64_t rows, std::int64_t cols, int bits, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (float& v : w) v = dist(rng);
  Matrix m;
  if (bits == 0) {
    m.bytes.resize(w.size() * 2);
    auto* p = reinterpret_cast<std::uint16_t*>(m.bytes.data());
    for (std::size_t i = 0; i < w.size(); ++i) p[i] = f32_to_bf16(w[i]);
    m.view = {.data = m.bytes.data(), .dtype = DType::kBF16, .rows = rows, .cols = cols};
    return m;
  }
  const int gs = 64;
  std::vector<std::uint32_t> codes(static_cast<std::size_t>(rows * cols * bits / 32));
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(rows * (cols / gs) * 2)), biases;
  biases.resize(scales.size());
  quantize_rows(w.data(), rows, cols, bits, gs, DType::kBF16, codes.data(), scales.data(),
                biases.data());
  const MlxQuantized mlx{.codes = codes.data(),
                         .scales = scales.data(),
                         .biases = biases.data(),
                         .dtype = DType::kBF16,
                         .rows = rows,
                         .cols = cols,
                         .bits = bits,
                         .group_size = gs};
  m.view = packed_view(mlx, nullptr);
  m.bytes.resize(static_cast<std::size_t>(m.view.total_bytes()));
  m.view.data = m.bytes.data();
  pack_quantized_rows(mlx, 0, rows, m.view);
  return m;
}

// Where --huge 1 puts the weights: huge pages, as the engine's quantized store and the page
// cache's large folios of a mapped checkpoint hold them.
PageArena* g_arena = nullptr;

// Moves a matrix's bytes into the arena when one is in use.
void place(Matrix& m) {
  if (g_arena == nullptr) return;
  void* p = g_arena->allocate(m.bytes.size());
  std::memcpy(p, m.bytes.data(), m.bytes.size());
  m.view.data = p;
  m.bytes = {};
}

Matrix make_matrix(std::int64_t rows, std::int64_t cols, int bits, std::mt19937& rng) {
  Matrix m = make_matrix_in_heap(rows, cols, bits, rng);
  place(m);
  return m;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t tokens = 512, layers = 2, reps = 5, n_experts = 128, top_k = 8, d_ff = 768;
  int bits = 0, threads = available_cores();
  // hot: every expert shares one set of matrices (compute alone, weights from the caches);
  // even: every expert gets exactly tokens * top_k / experts rows.
  bool hot = false, even = false, huge = false;
  std::string isa;
  std::vector<int> orders{-1};
  if (argc % 2 == 0) {
    std::fprintf(stderr, "moe_bench: option %s has no value\n", argv[argc - 1]);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--tokens")
      tokens = std::atoll(v);
    else if (a == "--layers")
      layers = std::atoll(v);
    else if (a == "--bits")
      bits = std::atoi(v);
    else if (a == "--threads")
      threads = std::atoi(v);
    else if (a == "--reps")
      reps = std::atoll(v);
    else if (a == "--isa")
      isa = v;
    else if (a == "--huge")
      huge = std::atoi(v) != 0;
    else if (a == "--hot")
      hot = std::atoi(v) != 0;
    else if (a == "--experts")
      n_experts = std::atoll(v);
    else if (a == "--top-k")
      top_k = std::atoll(v);
    else if (a == "--d-ff")
      d_ff = std::atoll(v);
    else if (a == "--even")
      even = std::atoi(v) != 0;
    else if (a == "--decode-orders") {
      orders.clear();
      for (const char* q = v; *q != 0;) {
        char* end = nullptr;
        orders.push_back(static_cast<int>(std::strtol(q, &end, 10)));
        if (end == q || orders.back() < -1 || orders.back() > 15) {
          std::fprintf(stderr, "moe_bench: --decode-orders wants bits -1..15, comma-separated\n");
          return 2;
        }
        q = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "moe_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if ((bits != 0 && bits != 4 && bits != 8) || tokens < 1 || layers < 1 || reps < 1 ||
      threads < 1 || n_experts < 1 || top_k < 1 || top_k > n_experts || d_ff < 64 ||
      d_ff % 64 != 0) {
    std::fprintf(stderr,
                 "moe_bench: --bits must be 0, 4 or 8; --tokens, --layers, --reps, --threads, "
                 "--experts at least 1; --top-k 1..experts; --d-ff a multiple of 64\n");
    return 2;
  }
  if (!isa.empty()) {
    const auto parsed = parse_isa(isa);
    if (!parsed.is_ok() || !select_isa(*parsed).is_ok()) {
      std::fprintf(stderr, "cannot select ISA %s\n", isa.c_str());
      return 2;
    }
  }
  ThreadPool pool(threads);
  PageArena arena;
  if (huge) g_arena = &arena;
  std::mt19937 rng(1);
  std::vector<std::vector<Matrix>> gate(layers), up(layers), down(layers);
  for (std::int64_t l = 0; l < layers; ++l) {
    for (std::int64_t e = 0; e < (hot ? 1 : n_experts); ++e) {
      gate[l].push_back(make_matrix(d_ff, kDModel, bits, rng));
      up[l].push_back(make_matrix(d_ff, kDModel, bits, rng));
      down[l].push_back(make_matrix(kDModel, d_ff, bits, rng));
    }
  }
  // Uniform routing: each token picks top_k distinct experts.
  std::vector<std::int64_t> count(n_experts, 0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<int> ids(n_experts);
    for (int e = 0; e < n_experts; ++e) ids[static_cast<std::size_t>(e)] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int j = 0; j < top_k; ++j) ++count[ids[j]];
  }
  if (even) std::fill(count.begin(), count.end(), tokens * top_k / n_experts);
  std::int64_t fewest = tokens, most = 0;
  for (std::int64_t n : count) fewest = std::min(fewest, n), most = std::max(most, n);
  std::printf("rows per expert: %lld to %lld\n", static_cast<long long>(fewest),
              static_cast<long long>(most));
  const std::int64_t slots = tokens * top_k;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> xg(slots * kDModel), g(slots * d_ff), u(slots * d_ff), y(slots * kDModel);
  for (float& v : xg) v = dist(rng);
  const Ceilings c = measure_ceilings(pool, 0.5);
  // Quantized experts' dot products run on int8: fractions are of the int8 peak.
  const double peak = c.peak_for(bits != 0);
  std::printf("isa %s, %d threads, %s peak %.1f G%s/s, read %.1f GB/s; %lld tokens, %s\n",
              isa_name(active_isa()), threads, bits == 0 ? "bf16" : "int8", peak / 1e9,
              bits == 0 ? "FLOP" : "OP", c.read_bytes_per_s / 1e9, static_cast<long long>(tokens),
              bits == 0   ? "bf16"
              : bits == 4 ? "q4 g64"
                          : "q8 g64");
  {
    // One expert's matmuls alone, repeated on the same rows (weights and activations hot): the
    // kernels' speed at this shape without the grouping around them.
    const std::int64_t m = tokens * top_k / n_experts;
    for (const auto& [name, w] :
         {std::pair{"gate alone", gate[0][0].view}, std::pair{"down alone", down[0][0].view}}) {
      double best = 1e30;
      for (int r = 0; r < 200; ++r) {
        const auto t0 = Clock::now();
        matmul(pool, w.cols == kDModel ? xg.data() : g.data(), m, w, y.data());
        best = std::min(best, seconds_since(t0));
      }
      const double fl = 2.0 * static_cast<double>(m * w.rows * w.cols);
      std::printf("%s, %lld rows: %.1f GFLOP/s, %.1f%% of peak\n", name, static_cast<long long>(m),
                  fl / best / 1e9, 100 * fl / best / peak);
    }
  }
  std::vector<MatmulOut> outs;
  outs.reserve(2 * n_experts);
  std::vector<MatmulGroup> up_groups, down_groups;
  std::vector<MatmulOut> down_outs;
  down_outs.reserve(n_experts);
  // Decode-sized calls (a few tokens) are bound by reading the chosen experts' weights once.
  double bytes = 0;
  for (std::int64_t e = 0; e < n_experts; ++e) {
    if (count[e] == 0) continue;
    const std::size_t me = hot ? 0 : static_cast<std::size_t>(e);
    bytes += static_cast<double>(gate[0][me].view.total_bytes() + up[0][me].view.total_bytes() +
                                 down[0][me].view.total_bytes());
  }
  // Each repetition is paired with a read-probe pass just before it: the ratio of the two is
  // steadier than either figure on a host whose bandwidth wanders.
  ReadProbe probe(std::int64_t{512} << 20);
  probe.calibrate(pool);
  const std::size_t n_orders = orders.size();
  std::vector<std::vector<double>> of_probe(orders.size());
  std::vector<double> best1(n_orders, 1e30), best2(n_orders, 1e30), best_act(n_orders, 1e30);
  for (std::int64_t r = 0; r < reps * static_cast<std::int64_t>(n_orders); ++r) {
    const std::size_t o = static_cast<std::size_t>(r) % n_orders;
    const kernels::detail::DecodeOrder order = kernels::detail::decode_order_from_bits(orders[o]);
    kernels::detail::override_decode_order(orders[o] < 0 ? nullptr : &order);
    const double probe_bytes_per_s = probe.pass(pool);
    double t1 = 0, t2 = 0, ta = 0;
    for (std::int64_t l = 0; l < layers; ++l) {
      outs.clear();
      down_outs.clear();
      up_groups.clear();
      down_groups.clear();
      std::int64_t b = 0;
      for (std::int64_t e = 0; e < n_experts; ++e) {
        const std::int64_t m = count[e];
        if (m == 0) continue;
        const std::size_t me = hot ? 0 : static_cast<std::size_t>(e);
        outs.push_back({gate[l][me].view, g.data() + b * d_ff});
        outs.push_back({up[l][me].view, u.data() + b * d_ff});
        up_groups.push_back(
            {.x = xg.data() + b * kDModel, .n_rows = m, .outs = std::span(outs).last(2)});
        down_outs.push_back({down[l][me].view, y.data() + b * kDModel});
        down_groups.push_back(
            {.x = g.data() + b * d_ff, .n_rows = m, .outs = std::span(down_outs).last(1)});
        b += m;
      }
      auto t0 = Clock::now();
      matmul_grouped(pool, up_groups);
      t1 += seconds_since(t0);
      t0 = Clock::now();
      swiglu(g.data(), u.data(), g.data(), slots * d_ff);
      ta += seconds_since(t0);
      t0 = Clock::now();
      matmul_grouped(pool, down_groups);
      t2 += seconds_since(t0);
    }
    of_probe[o].push_back(bytes * static_cast<double>(layers) / (t1 + t2) / probe_bytes_per_s);
    best1[o] = std::min(best1[o], t1);
    best2[o] = std::min(best2[o], t2);
    best_act[o] = std::min(best_act[o], ta);
  }
  const double f1 = 2.0 * static_cast<double>(slots) * 2 * d_ff * kDModel * layers;
  const double f2 = 2.0 * static_cast<double>(slots) * d_ff * kDModel * layers;
  for (std::size_t o = 0; o < n_orders; ++o) {
    if (n_orders > 1) std::printf("decode order %d:\n", orders[o]);
    std::printf("gate+up: %.2f ms/layer, %.1f GFLOP/s, %.1f%% of peak\n", best1[o] / layers * 1e3,
                f1 / best1[o] / 1e9, 100 * f1 / best1[o] / peak);
    std::printf("down:    %.2f ms/layer, %.1f GFLOP/s, %.1f%% of peak\n", best2[o] / layers * 1e3,
                f2 / best2[o] / 1e9, 100 * f2 / best2[o] / peak);
    std::printf("swiglu:  %.2f ms/layer (one thread)\n", best_act[o] / layers * 1e3);
    std::printf("experts: %.1f%% of the %s peak over both stages\n",
                100 * (f1 + f2) / (best1[o] + best2[o]) / peak, bits == 0 ? "bf16" : "int8");
    std::printf("weights: %.1f MB/layer of %lld experts, %.1f GB/s, %.0f%% of the read probe\n",
                bytes / 1e6,
                static_cast<long long>(std::count_if(count.begin(), count.end(),
                                                     [](std::int64_t n) { return n > 0; })),
                bytes * layers / (best1[o] + best2[o]) / 1e9,
                100 * bytes * layers / (best1[o] + best2[o]) / c.read_bytes_per_s);
    std::vector<double>& r = of_probe[o];
    std::sort(r.begin(), r.end());
    std::printf(
        "weights against the probe pass before each repetition: median %.0f%% (%.0f-%.0f%%)\n",
        100 * r[r.size() / 2], 100 * r.front(), 100 * r.back());
  }
  return 0;
}
