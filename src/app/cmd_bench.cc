// recur bench: this machine's ceilings (bf16 compute peak, read bandwidth), then - with -m - the
// model's prefill and decode throughput as fractions of them, all in one run.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "app/bench_engine.h"
#include "app/commands.h"
#include "app/runtime.h"
#include "app/settings.h"
#include "kernels/bench.h"
#include "kernels/matmul_isa.h"
#include "util/log.h"

namespace recur::app {

namespace {

// "128,512,2048" -> {128, 512, 2048}; each an integer from `least` up to 1 << 20.
Result<std::vector<std::int64_t>> parse_counts(const std::string& text, const char* flag,
                                               std::int64_t least = 1) {
  std::vector<std::int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < least ||
        v > (1 << 20)) {
      return Error(StatusCode::kInvalidArgument,
                   "{} '{}': item '{}' is not an integer from {} to 1048576", flag, text, item,
                   least);
    }
    out.push_back(v);
    pos = end + 1;
  }
  return out;
}

// "-1,9" -> {-1, 9}: kernels::detail::DecodeOrder bits (0-15) or -1 for the CPU vendor's;
// empty: {-1}.
Result<std::vector<int>> parse_decode_orders(const std::string& text) {
  if (text.empty()) return std::vector<int>{-1};
  auto counts = parse_counts(text, "--bench-decode-orders", -1);
  if (!counts) return counts.status();
  std::vector<int> out;
  for (std::int64_t v : *counts) {
    if (v > 15) {
      return Error(StatusCode::kInvalidArgument,
                   "--bench-decode-orders '{}': order {} is not -1 (the CPU vendor's) or a sum of "
                   "the order bits 1, 2, 4 and 8 (at most 15)",
                   text, v);
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// "none,q8,q4" -> {0, 8, 4}; empty: the --quantize setting alone.
Result<std::vector<int>> parse_formats(const std::string& text, int quantize_bits) {
  if (text.empty()) return std::vector<int>{quantize_bits};
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    if (item == "none" || item == "q8" || item == "q4") {
      out.push_back(item == "none" ? 0 : item == "q8" ? 8 : 4);
    } else {
      return Error(StatusCode::kInvalidArgument,
                   "--bench-quantize '{}': item '{}' is not one of none, q8, q4", text, item);
    }
    pos = end + 1;
  }
  return out;
}

std::string format_name(int bits, int group_size) {
  return bits == 0 ? std::string("as stored") : fmt::format("q{} g{}", bits, group_size);
}

constexpr int kDecodeSteps = 32;

// --bench-stages: one prefill row's stages, each with its time (all its calls, summed over the
// layers), its share of the forward and its matmuls' rate against the peak. A stage's figures
// include the stages under it.
// A share of the peak, or "-" where the ISA has no probe (scalar).
std::string of_peak(double rate, double peak) {
  return peak > 0 ? fmt::format("{:.0f}%", 100 * rate / peak) : std::string("-");
}

std::string stage_table(const PrefillResult& p, const std::string& weights, double peak) {
  std::string out = fmt::format(
      "\nStages of the prefill of {} tokens after {} ({}), {:.1f} ms:\n\n| stage | calls | ms | "
      "share | GFLOP/s | of peak |\n|---|---|---|---|---|---|\n",
      p.n_tokens, p.prefix_tokens, weights, 1e3 * p.seconds);
  for (const stages::Stage& s : p.stages) {
    const std::string rate = s.flops > 0 ? fmt::format("{:.1f} | {}", s.flops / s.seconds / 1e9,
                                                       of_peak(s.flops / s.seconds, peak))
                                         : std::string("- | -");
    out += fmt::format("| {} | {} | {:.2f} | {:.1f}% | {} |\n", s.path, s.calls, 1e3 * s.seconds,
                       100 * s.seconds / p.seconds, rate);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int cmd_bench(const BenchSettings& settings) {
  apply_memory_policy(settings.runtime);
  const double probe_s = settings.probe_seconds;
  if (settings.runtime.model_dir.empty()) {
    if (auto isa = kernels::select_isa(settings.runtime.isa); !isa) {
      log::error("recur bench: {}", isa.status().message());
      return kExitFailure;
    }
    ThreadPool pool(settings.runtime.threads_or_cores(), settings.runtime.thread_spin);
    kernels::Ceilings c = kernels::measure_ceilings(pool, probe_s);
    fmt::print(
        "threads {}, isa {}: bf16 peak {:.1f} GFLOP/s (avx2 f32 fma {:.1f}, avx512 {:.1f}, amx "
        "{:.1f}), int8 peak {:.1f} GOP/s (avx2 {:.1f}, avx-vnni {:.1f}, avx512 {:.1f}, amx "
        "{:.1f}), read bandwidth {:.1f} GB/s ({})\n(the probes of the active ISA; --isa picks "
        "another; pass -m DIR for prefill and decode figures; bench/kernels has the matmul "
        "shapes)\n",
        c.n_threads, kernels::isa_name(c.isa), c.peak_flops() / 1e9, c.avx2_f32_flops / 1e9,
        c.avx512_bf16_flops / 1e9, c.amx_bf16_flops / 1e9, c.int8_peak_ops() / 1e9,
        c.avx2_int8_ops / 1e9, c.avxvnni_int8_ops / 1e9, c.avx512_int8_ops / 1e9,
        c.amx_int8_ops / 1e9, c.read_bytes_per_s / 1e9, c.read_mode);
    return kExitOk;
  }
  auto prompts = parse_counts(settings.prompt_lengths, "--bench-prompts");
  auto sequences = parse_counts(settings.sequence_counts, "--bench-sequences");
  auto prefixes = parse_counts(settings.prefix_lengths, "--bench-prefix", 0);
  for (const auto* r : {&prompts, &sequences, &prefixes}) {
    if (!*r) {
      log::error("recur bench: {}", r->status().message());
      return kExitFailure;
    }
  }
  auto formats = parse_formats(settings.quantizations, settings.runtime.quantize_bits);
  if (!formats) {
    log::error("recur bench: {}", formats.status().message());
    return kExitFailure;
  }
  auto orders = parse_decode_orders(settings.decode_orders);
  if (!orders) {
    log::error("recur bench: {}", orders.status().message());
    return kExitFailure;
  }
  const std::int64_t max_seqs = *std::max_element(sequences->begin(), sequences->end());
  const std::int64_t context = settings.context_tokens;
  const std::int64_t max_batch =
      std::max<std::int64_t>(*std::max_element(prompts->begin(), prompts->end()), 64 * max_seqs);
  std::vector<std::string> prefill_rows, decode_rows, stage_tables;
  std::vector<double> first_speeds;  // the first format's tokens/s, row by row
  kernels::Ceilings c;
  for (std::size_t f = 0; f < formats->size(); ++f) {
    RuntimeSettings rs = settings.runtime;
    rs.quantize_bits = (*formats)[f];
    const std::string weights = format_name(rs.quantize_bits, rs.quantize_group_size);
    auto rt = load_runtime(rs, max_batch, max_seqs);
    if (!rt) {
      log::error("recur bench: {}", rt.status().message());
      return kExitFailure;
    }
    if (f == 0) {
      c = kernels::measure_ceilings(*rt->pool, probe_s);
      fmt::print("model {} ({}), threads {}\n", settings.runtime.model_dir, rt->model->family(),
                 rt->n_threads);
      fmt::print(
          "ceilings ({}): bf16 peak {:.1f} GFLOP/s, int8 peak {:.1f} GOP/s, read bandwidth {:.1f} "
          "GB/s ({})\n",
          kernels::isa_name(c.isa), c.peak_flops() / 1e9, c.int8_peak_ops() / 1e9,
          c.read_bytes_per_s / 1e9, c.read_mode);
    }
    // Quantized weights' dot products run on int8 (a checkpoint stored quantized, or quantized
    // on load): their fraction is of the int8 peak.
    const double peak = c.peak_for(rs.quantize_bits != 0 || rt->model->quantized_bytes() > 0);
    const ModelCost cost = model_cost(*rt->model);
    fmt::print("cost ({}): {:.2f} GFLOP per prompt token, {:.1f} MB of weights per decode step\n",
               weights, cost.flops_per_token / 1e9, cost.decode_step_bytes / 1e6);
    if (cost.expert_bytes > 0) {
      fmt::print(
          "experts ({}): {:.1f} MB in all, counted as the steps route (not in the line "
          "above)\n",
          weights, cost.expert_bytes / 1e6);
    }
    std::size_t row = 0;
    // The speed against the first format's on the same row ("1.00" on the first format's rows).
    const auto versus_first = [&](double tokens_per_s) {
      if (f == 0) first_speeds.push_back(tokens_per_s);
      return fmt::format("{:.2f}", tokens_per_s / first_speeds[row++]);
    };
    for (std::int64_t prefix : *prefixes) {
      for (std::int64_t n : *prompts) {
        stages::set_enabled(settings.stages);
        PrefillResult p = bench_prefill(*rt->model, *rt->pool, n, prefix, max_batch, 2);
        stages::set_enabled(false);
        prefill_rows.push_back(fmt::format(
            "| prefill | {} | {} | {} | {:.1f} | {} | {:.1f} | {} | {} |", weights, prefix, n,
            p.tokens_per_s, versus_first(p.tokens_per_s), p.flops_per_s / 1e9,
            of_peak(p.flops_per_s, peak), of_peak(p.flops_with_attention_per_s, peak)));
        if (settings.stages) stage_tables.push_back(stage_table(p, weights, peak));
      }
    }
    // Decode: each step is paired with one probe pass just before it, and the fraction is the
    // median of the per-pair fractions, so a change in the host's bandwidth between minutes (1.5x
    // on the dev VM) cannot land between a ceiling and the step it divides.
    kernels::ReadProbe probe(c.buffer_bytes);
    probe.calibrate(*rt->pool);
    for (std::int64_t n : *sequences) {
      DecodeBench bench(*rt->model, *rt->pool, static_cast<int>(n), context, max_batch);
      // With several --bench-decode-orders the steps take turns, kDecodeSteps each.
      struct OrderFigures {
        std::vector<double> bws, of_bound, of_total;
        double seconds = 0, state_bytes = 0, step_bytes = 0;
      };
      std::vector<OrderFigures> figures(orders->size());
      for (int s = 0; s < kDecodeSteps * static_cast<int>(orders->size()); ++s) {
        const int bits = (*orders)[static_cast<std::size_t>(s) % orders->size()];
        OrderFigures& o = figures[static_cast<std::size_t>(s) % orders->size()];
        const kernels::detail::DecodeOrder order = kernels::detail::decode_order_from_bits(bits);
        kernels::detail::override_decode_order(bits < 0 ? nullptr : &order);
        const double bw_s = probe.pass(*rt->pool);
        o.state_bytes = bench.state_bytes_per_step();
        const double t = bench.step();
        o.seconds += t;
        o.bws.push_back(bw_s);
        // A mixture of experts reads the experts its sequences chose this step.
        const double weight_bytes = cost.decode_step_bytes + bench.expert_bytes_last_step();
        o.step_bytes += weight_bytes;
        o.of_bound.push_back(weight_bytes / t / bw_s);
        o.of_total.push_back((weight_bytes + o.state_bytes) / t / bw_s);
      }
      kernels::detail::override_decode_order(nullptr);
      for (std::size_t i = 0; i < orders->size(); ++i) {
        const OrderFigures& o = figures[i];
        const double tokens_per_s = static_cast<double>(n * kDecodeSteps) / o.seconds;
        const double bw_med = median(o.bws);
        const std::string label = settings.decode_orders.empty()
                                      ? weights
                                      : fmt::format("{}, order {}", weights, (*orders)[i]);
        decode_rows.push_back(fmt::format(
            "| decode | {} | {} | {:.1f} | {} | {:.1f} GB/s | {:.1f} | {:.0f}% | {:.1f} | {:.0f}% "
            "|",
            label, n, tokens_per_s, versus_first(tokens_per_s), bw_med / 1e9,
            static_cast<double>(n) * bw_med / (o.step_bytes / kDecodeSteps),
            100 * median(o.of_bound), o.state_bytes / 1e6, 100 * median(o.of_total)));
      }
    }
  }
  fmt::print(
      "\nPrefill after --bench-prefix tokens already in the sequence; GFLOP/s counts the "
      "matmuls, \"with attention\" adds attention's q·k and p·V; \"of peak\" is of the bf16 "
      "peak, or of the int8 peak for quantized weights; \"vs first\" is the speed against the "
      "first --bench-quantize format's on the same row.\n");
  fmt::print(
      "\n| phase | weights | prefix | tokens | tokens/s | vs first | GFLOP/s | of peak | of peak "
      "with attention |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& r : prefill_rows) fmt::print("{}\n", r);
  for (const std::string& t : stage_tables) fmt::print("{}", t);
  fmt::print(
      "\nDecode with {} tokens of context per sequence (--bench-context); state MB/step is "
      "the KV read and recurrent state read and written.\n",
      context);
  fmt::print(
      "\n| phase | weights | sequences | tokens/s | vs first | bandwidth (paired) | bound tokens/s "
      "| of bound | state MB/step | of weights+state bound |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& r : decode_rows) fmt::print("{}\n", r);
  return kExitOk;
}

}  // namespace recur::app
