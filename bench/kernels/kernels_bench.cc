// kernels_bench: measures this machine's bf16 compute peak and read bandwidth, then our matmul on
// the Qwen3.5-0.8B layer shapes (and oneDNN's on the same shapes) as fractions of them. Prints
// markdown (docs/performance.md quotes it).
//   kernels_bench [--threads N] [--seconds S] [--rows 1,4,128,512] [--isa NAME] [--only TEXT]
//                 [--no-onednn] [--keys 128,1024,4096] [--seqs 1,4] [--no-matmul]
//                 [--no-attention] [--quant 8,4] [--group-size 64] [--mxfp4]
//                 [--decode-order BITS] [--shape NxK] [--rounds 3]
// --shape replaces the Qwen3.5-0.8B shapes with one N x K matrix (e.g. 151936x2048, the untied
// head of Qwen3-30B-A3B).
// --decode-order forces the 1-8-row calls' read order (matmul_isa.h DecodeOrder: 1 one row
// sequential, 2 rows sequential, 4 L1 prefetch, 8 scattered L1 prefetch; any sum) instead of the
// CPU vendor's, to measure the orders against each other on a new CPU.
// --decode-orders B1,B2,... measures those orders (-1: the vendor's) against each other instead
// of the tables: for each shape and row count, rounds that run every order in turn, each order's
// calls paired with read-probe passes just before them; prints each order's median fraction of the
// probe's mean over as long a window just before it, and its median GB/s (a host whose bandwidth
// wanders falls on all orders alike).
// --quant adds rows for weights quantized to those bit widths (quant.h), each with its speed
// against bf16's on the same shape and rows, timed in the same rounds; --mxfp4 one more for MXFP4
// weights (quant.h: 4-bit e2m1 codes in groups of 32, gpt-oss's experts).
// --rounds: how many turns the weight formats take within --seconds (more, shorter turns spread
// the other processes of a shared host more evenly over the formats compared). With --mxfp4 a
// second table gives MXFP4's speed against each --quant format turn by turn (the best call of
// each in the same turn, a fraction of a second apart): median and range over the turns, steadier
// than the best calls' ratio where the host's other processes come and go.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/bench.h"
#include "kernels/isa.h"
#include "kernels/matmul_isa.h"
#ifdef RECUR_HAVE_DNNL
#include "onednn_matmul.h"
#endif

namespace {

using namespace recur;

struct Args {
  int threads = 0;
  double seconds = 0.3;
  std::vector<std::int64_t> rows = {1, 4, 128, 512};
  std::string isa = "auto";
  std::string only;
  bool onednn = true;
  bool matmul = true;
  bool attention = true;
  std::vector<std::int64_t> keys = {128, 1024, 4096};
  std::vector<std::int64_t> seqs = {1, 4};
  std::vector<std::int64_t> quant_bits;
  int group_size = 64;
  bool mxfp4 = false;
  int rounds = 3;
  int decode_order = -1;                    // the vendor's
  std::vector<std::int64_t> decode_orders;  // --decode-orders: compare these instead
  std::vector<kernels::MatmulShape> shapes = kernels::qwen35_08b_shapes();
};

std::vector<std::int64_t> parse_list(const char* s) {
  std::vector<std::int64_t> out;
  for (const char* p = s; *p != '\0';) {
    out.push_back(std::strtoll(p, nullptr, 10));
    const char* comma = std::strchr(p, ',');
    if (comma == nullptr) break;
    p = comma + 1;
  }
  return out;
}

bool parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const bool has_value = i + 1 < argc;
    if (k == "--threads" && has_value) {
      a.threads = std::atoi(argv[++i]);
    } else if (k == "--seconds" && has_value) {
      a.seconds = std::atof(argv[++i]);
    } else if (k == "--rows" && has_value) {
      a.rows = parse_list(argv[++i]);
    } else if (k == "--isa" && has_value) {
      a.isa = argv[++i];
    } else if (k == "--only" && has_value) {
      a.only = argv[++i];
    } else if (k == "--no-onednn") {
      a.onednn = false;
    } else if (k == "--no-matmul") {
      a.matmul = false;
    } else if (k == "--no-attention") {
      a.attention = false;
    } else if (k == "--keys" && has_value) {
      a.keys = parse_list(argv[++i]);
    } else if (k == "--quant" && has_value) {
      a.quant_bits = parse_list(argv[++i]);
    } else if (k == "--rounds" && has_value) {
      a.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (k == "--mxfp4") {
      a.mxfp4 = true;
    } else if (k == "--group-size" && has_value) {
      a.group_size = std::atoi(argv[++i]);
    } else if (k == "--decode-order" && has_value) {
      a.decode_order = std::atoi(argv[++i]);
    } else if (k == "--decode-orders" && has_value) {
      a.decode_orders = parse_list(argv[++i]);
    } else if (k == "--seqs" && has_value) {
      a.seqs = parse_list(argv[++i]);
    } else if (k == "--shape" && has_value) {
      const std::string v = argv[++i];
      char* end = nullptr;
      const std::int64_t n = std::strtoll(v.c_str(), &end, 10);
      const std::int64_t kdim = *end == 'x' ? std::strtoll(end + 1, &end, 10) : 0;
      if (n <= 0 || kdim <= 0 || *end != '\0') {
        fmt::print(stderr, "kernels_bench: --shape wants NxK (e.g. 151936x2048), not '{}'\n", v);
        return false;
      }
      a.shapes = {{v, n, kdim}};
    } else {
      fmt::print(stderr, "kernels_bench: unknown or incomplete argument '{}'\n", k);
      return false;
    }
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void print_matmul(ThreadPool& pool, const Args& args, const kernels::Ceilings& c) {
  const double peak = c.peak_flops();
  // The quantized formats timed beside bf16: --quant's widths, then MXFP4 (bits 0).
  std::vector<int> formats;
  for (std::int64_t b : args.quant_bits) formats.push_back(static_cast<int>(b));
  if (args.mxfp4) formats.push_back(0);
  const auto format_name = [&](int bits) {
    return bits == 0 ? std::string("mxfp4") : fmt::format("q{} g{}", bits, args.group_size);
  };
  fmt::print("## bf16 matmul, {}\n\n",
             args.shapes.size() == 1 ? "one shape" : "Qwen3.5-0.8B shapes");
  fmt::print(
      "Fractions: of the compute peak ({:.1f} GFLOP/s bf16; quantized rows: of the int8 peak, "
      "{:.1f} GOP/s) and of the read bandwidth ({:.1f} GB/s, weight bytes per call).\n\n",
      peak / 1e9, c.int8_peak_ops() / 1e9, c.read_bytes_per_s / 1e9);
  fmt::print("| shape | N x K | rows | weights | recur GFLOP/s | of peak | of bandwidth |{}{}\n",
             formats.empty() ? "" : " speed vs bf16 |",
             args.onednn ? " oneDNN GFLOP/s | oneDNN of peak | recur / oneDNN |" : "");
  fmt::print("|---|---|---|---|---|---|---|{}{}\n", formats.empty() ? "" : "---|",
             args.onednn ? "---|---|---|" : "");
  std::string onednn_impl;
  std::vector<std::string> mxfp4_rows;  // the MXFP4-against-affine table's rows
  for (const auto& shape : args.shapes) {
    if (!args.only.empty() && shape.name.find(args.only) == std::string::npos) continue;
    for (std::int64_t rows : args.rows) {
      // recur and oneDNN take turns, best call of each kept, so a period in which the host
      // slows this VM falls on both instead of on whichever happened to run then.
      kernels::MatmulTiming t;
      std::vector<kernels::MatmulTiming> tq(formats.size());
#ifdef RECUR_HAVE_DNNL
      bench::OnednnTiming o;
#endif
      const double turn = args.seconds / args.rounds;
      // Per --quant format: MXFP4's speed against it in each turn.
      std::vector<std::vector<double>> mxfp4_vs(args.mxfp4 ? args.quant_bits.size() : 0);
      for (int round = 0; round < args.rounds; ++round) {
        const auto tr = kernels::time_matmul(pool, shape, rows, turn);
        if (tr.flops_per_s > t.flops_per_s) t = tr;
        std::vector<double> turn_seconds(tq.size());
        for (std::size_t q = 0; q < tq.size(); ++q) {
          const auto tqr = kernels::time_matmul(
              pool, shape, rows, turn, formats[q], args.group_size,
              formats[q] == 0 ? kernels::QuantCodes::kMxfp4 : kernels::QuantCodes::kAffine);
          if (tqr.flops_per_s > tq[q].flops_per_s) tq[q] = tqr;
          turn_seconds[q] = tqr.seconds;
        }
        for (std::size_t q = 0; q < mxfp4_vs.size(); ++q) {
          mxfp4_vs[q].push_back(turn_seconds[q] / turn_seconds.back());
        }
#ifdef RECUR_HAVE_DNNL
        if (args.onednn) {
          auto orr = bench::time_onednn_matmul_bf16(shape, rows, turn);
          if (orr.timing.flops_per_s > o.timing.flops_per_s) o = std::move(orr);
        }
#endif
      }
      fmt::print("| {} | {}x{} | {} | bf16 | {:.1f} | {:.0f}% | {:.0f}% |{}", shape.name,
                 shape.n_out, shape.k_dim, rows, t.flops_per_s / 1e9, 100 * t.flops_per_s / peak,
                 100 * t.bytes_per_s / c.read_bytes_per_s, tq.empty() ? "" : " 1.00 |");
#ifdef RECUR_HAVE_DNNL
      if (args.onednn) {
        onednn_impl = o.impl;
        fmt::print(" {:.1f} | {:.0f}% | {:.2f} |", o.timing.flops_per_s / 1e9,
                   100 * o.timing.flops_per_s / peak, t.flops_per_s / o.timing.flops_per_s);
      }
#endif
      fmt::print("\n");
      for (std::size_t q = 0; q < tq.size(); ++q) {
        fmt::print("| {} | {}x{} | {} | {} | {:.1f} | {:.0f}% | {:.0f}% | {:.2f} |{}\n", shape.name,
                   shape.n_out, shape.k_dim, rows, format_name(formats[q]), tq[q].flops_per_s / 1e9,
                   100 * tq[q].flops_per_s / c.int8_peak_ops(),
                   100 * tq[q].bytes_per_s / c.read_bytes_per_s, t.seconds / tq[q].seconds,
                   args.onednn ? " | | |" : "");
      }
      for (std::size_t q = 0; q < mxfp4_vs.size(); ++q) {
        const auto [lo, hi] = std::minmax_element(mxfp4_vs[q].begin(), mxfp4_vs[q].end());
        mxfp4_rows.push_back(fmt::format("| {} | {} | {} | {:.3f} | {:.2f}-{:.2f} |", shape.name,
                                         rows, format_name(formats[q]), median(mxfp4_vs[q]), *lo,
                                         *hi));
      }
      std::fflush(stdout);
    }
  }
  if (!onednn_impl.empty()) fmt::print("\noneDNN implementation (last shape): {}\n", onednn_impl);
  fmt::print("\n");
  if (!mxfp4_rows.empty()) {
    fmt::print("## MXFP4 against the affine formats, turn by turn ({} turns)\n\n", args.rounds);
    fmt::print(
        "| shape | rows | against | MXFP4's speed, median | range |\n|---|---|---|---|---|\n");
    for (const std::string& row : mxfp4_rows) fmt::print("{}\n", row);
    fmt::print("\n");
  }
}

// The probe's mean rate over passes filling `seconds`: a call's mean is paired with a mean over
// as long a window (single passes just before each call read 0.3-1x as fast as the call).
double probe_for(ThreadPool& pool, kernels::ReadProbe& probe, double seconds) {
  double bytes = 0, elapsed = 0;
  do {
    const double rate = probe.pass(pool);
    bytes += static_cast<double>(probe.bytes());
    elapsed += static_cast<double>(probe.bytes()) / rate;
  } while (elapsed < seconds);
  return bytes / elapsed;
}

void print_decode_orders(ThreadPool& pool, const Args& args) {
  constexpr int kOrderRounds = 8;
  kernels::ReadProbe probe(std::int64_t{512} << 20);
  probe.calibrate(pool);
  fmt::print(
      "## Decode orders, each order's calls against read-probe passes ({}) just before them\n\n",
      kernels::read_mode_name(probe.mode()));
  fmt::print("| shape | rows | order | of the paired probe (median, range) | GB/s (median) |\n");
  fmt::print("|---|---|---|---|---|\n");
  for (const auto& shape : args.shapes) {
    if (!args.only.empty() && shape.name.find(args.only) == std::string::npos) continue;
    for (std::int64_t rows : args.rows) {
      const std::size_t n = args.decode_orders.size();
      std::vector<std::vector<double>> ratio(n), rate(n);
      kernels::MatmulBench bench(shape, rows);
      for (int round = 0; round < kOrderRounds; ++round) {
        for (std::size_t o = 0; o < n; ++o) {
          const int bits = static_cast<int>(args.decode_orders[o]);
          const kernels::detail::DecodeOrder order = kernels::detail::decode_order_from_bits(bits);
          kernels::detail::override_decode_order(bits < 0 ? nullptr : &order);
          const double slot = args.seconds / (2 * kOrderRounds * static_cast<double>(n));
          const double probe_bytes_per_s = probe_for(pool, probe, slot);
          const auto t = bench.run(pool, slot);
          // The mean call, not the best: the probe pass is one pass, not the best of several.
          ratio[o].push_back(t.mean_bytes_per_s / probe_bytes_per_s);
          rate[o].push_back(t.mean_bytes_per_s / 1e9);
        }
      }
      kernels::detail::override_decode_order(nullptr);
      for (std::size_t o = 0; o < n; ++o) {
        const auto [lo, hi] = std::minmax_element(ratio[o].begin(), ratio[o].end());
        fmt::print("| {} | {} | {} | {:.0f}% ({:.0f}-{:.0f}%) | {:.1f} |\n", shape.name, rows,
                   args.decode_orders[o], 100 * median(ratio[o]), 100 * *lo, 100 * *hi,
                   median(rate[o]));
      }
      std::fflush(stdout);
    }
  }
  fmt::print("\n");
}

void print_attention(ThreadPool& pool, const Args& args, const kernels::Ceilings& c) {
  fmt::print("## Decode attention, bf16 KV cache\n\n");
  fmt::print(
      "One query per sequence and layer over the whole cache; K/V bytes per step against the "
      "read bandwidth ({:.1f} GB/s).\n\n",
      c.read_bytes_per_s / 1e9);
  fmt::print("| geometry | layout | keys | sequences | us per layer | GB/s | of bandwidth |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  for (const auto& shape : kernels::decode_attention_shapes()) {
    if (!args.only.empty() && shape.name.find(args.only) == std::string::npos) continue;
    for (std::int64_t keys : args.keys) {
      for (std::int64_t seqs : args.seqs) {
        // Enough layers of caches that a step reads >= 512 MiB: K/V come from memory.
        const std::int64_t per_layer = seqs * keys * shape.n_kv_heads * shape.head_dim * 4;
        const std::int64_t layers =
            std::max<std::int64_t>(1, (std::int64_t{512} << 20) / per_layer);
        for (bool head_major : {false, true}) {
          const auto t = kernels::time_decode_attention(pool, shape, keys, seqs, layers, head_major,
                                                        args.seconds);
          fmt::print("| {} | {} | {} | {} | {:.0f} | {:.1f} | {:.0f}% |\n", shape.name,
                     head_major ? "head-major" : "token-major", keys, seqs,
                     1e6 * t.seconds / static_cast<double>(layers), t.bytes_per_s / 1e9,
                     100 * t.bytes_per_s / c.read_bytes_per_s);
          std::fflush(stdout);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recur;
  Args args;
  if (!parse_args(argc, argv, args)) return 2;
  auto isa = kernels::parse_isa(args.isa);
  if (isa.is_ok()) isa = kernels::select_isa(*isa);
  if (!isa.is_ok()) {
    fmt::print(stderr, "kernels_bench: {}\n", isa.status().to_string());
    return 2;
  }
  if (args.decode_order >= 0) {
    const kernels::detail::DecodeOrder order =
        kernels::detail::decode_order_from_bits(args.decode_order);
    kernels::detail::override_decode_order(&order);
  }
  ThreadPool pool(args.threads > 0 ? args.threads : available_cores());
  if (!args.decode_orders.empty()) {
    print_decode_orders(pool, args);
    return 0;
  }
  const kernels::Ceilings c = kernels::measure_ceilings(pool, args.seconds);
  fmt::print("## Ceilings ({} threads, ISA {})\n\n", c.n_threads, kernels::isa_name(*isa));
  fmt::print("| probe | measured |\n|---|---|\n");
  // The probes of the selected ISA's instructions (measure_ceilings runs no others).
  const auto probe = [](const char* name, double v, const char* unit) {
    if (v > 0) fmt::print("| {} register loop | {:.1f} {} |\n", name, v / 1e9, unit);
  };
  probe("AVX2 f32 vfmadd231ps", c.avx2_f32_flops, "GFLOP/s");
  probe("AVX2 int8 vpmaddubsw sequence", c.avx2_int8_ops, "GOP/s");
  probe("AVX-VNNI vpdpbusd", c.avxvnni_int8_ops, "GOP/s");
  probe("AVX-512 BF16 vdpbf16ps", c.avx512_bf16_flops, "GFLOP/s");
  probe("AVX-512 VNNI vpdpbusd", c.avx512_int8_ops, "GOP/s");
  probe("AMX-BF16 tdpbf16ps", c.amx_bf16_flops, "GFLOP/s");
  probe("AMX-INT8 tdpbsud", c.amx_int8_ops, "GOP/s");
  fmt::print("| read bandwidth, {} MiB buffer ({}) | {:.1f} GB/s |\n", c.buffer_bytes >> 20,
             c.read_mode, c.read_bytes_per_s / 1e9);
  fmt::print("\n");
  if (args.matmul) print_matmul(pool, args, c);
  if (args.attention) print_attention(pool, args, c);
  return 0;
}
