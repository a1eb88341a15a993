// Measurements of this machine's ceilings (bf16 and int8 compute peaks of register-only AMX /
// AVX-512 loops, read bandwidth of a buffer larger than the LLC) and of matmul throughput on
// given shapes, for bench/kernels and `recur bench`. Not used by inference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "util/thread_pool.h"

namespace recur::kernels {

struct Ceilings {
  int n_threads = 0;
  // The ISA the kernels ran on when measured: the peaks below are those of its instructions.
  Isa isa = Isa::kScalar;
  double avx2_f32_flops = 0;     // FLOP/s of f32 FMA on AVX2 (its bf16 and f16 matmul), all threads
  double avx512_bf16_flops = 0;  // FLOP/s, all threads; 0 when the CPU lacks AVX512-BF16
  double amx_bf16_flops = 0;     // FLOP/s, all threads; 0 when the CPU lacks AMX-BF16
  // The same for int8 dot products (vpdpbusd, tdpbsud), a multiply and an add per byte product:
  // the quantized matmul's arithmetic.
  double avx2_int8_ops = 0;     // AVX2's vpmaddubsw sequence (matmul_quant_avx2.cc)
  double avxvnni_int8_ops = 0;  // 256-bit vpdpbusd; 0 without AVX-VNNI
  double avx512_int8_ops = 0;
  double amx_int8_ops = 0;
  double read_bytes_per_s = 0;  // all threads reading a buffer of buffer_bytes
  const char* read_mode = "";   // which ReadProbe pass was the fastest (read_mode_name)
  std::int64_t buffer_bytes = 0;
  // Of the active ISA's instructions (0 on scalar): a figure "of peak" is of what its kernels
  // can reach, so --isa avx2 on an AVX-512 machine is measured against AVX2's peak.
  double peak_flops() const {
    switch (isa) {
      case Isa::kAmx:
        return amx_bf16_flops > avx512_bf16_flops ? amx_bf16_flops : avx512_bf16_flops;
      case Isa::kAvx512:
        return avx512_bf16_flops;
      case Isa::kAvx2:
      case Isa::kAvx2Vnni:
        return avx2_f32_flops;
      default:
        return 0;
    }
  }
  double int8_peak_ops() const {
    switch (isa) {
      case Isa::kAmx:
        return amx_int8_ops > avx512_int8_ops ? amx_int8_ops : avx512_int8_ops;
      case Isa::kAvx512:
        return avx512_int8_ops;
      case Isa::kAvx2Vnni:
        return avxvnni_int8_ops;
      case Isa::kAvx2:
        return avx2_int8_ops;
      default:
        return 0;
    }
  }
  // The peak of the arithmetic a weight runs on: int8 for quantized ones, else bf16.
  double peak_for(bool quantized) const { return quantized ? int8_peak_ops() : peak_flops(); }
};

// Each probe runs for about `seconds` and the best of three is kept.
Ceilings measure_ceilings(ThreadPool& pool, double seconds);

// How a ReadProbe pass reads: left to the hardware prefetcher, with software prefetch into L2
// 32 KiB ahead, or with that and a second request into L1 4 KiB ahead (what the decode GEMVs do
// on Intel, matmul_avx512.cc: the ceiling must be at least as fast as the fastest reader).
enum class ReadMode { kPlain, kL2, kL2L1 };
const char* read_mode_name(ReadMode m);

// The read-bandwidth probe one pass at a time, to interleave with measured work: on a shared host
// the memory bandwidth moves by 1.5x from one minute to the next (seen on the dev VM), so a ratio
// is only meaningful between a ceiling and a measurement taken milliseconds apart.
class ReadProbe {
 public:
  explicit ReadProbe(std::int64_t bytes);  // a buffer this large (> LLC), written once
  // Times every ReadMode (three passes each) and keeps the fastest for pass(): on some CPUs
  // prefetching reads 1.3x faster, on others slower.
  void calibrate(ThreadPool& pool);
  // Bytes/s of one whole pass over the buffer on all pool threads.
  double pass(ThreadPool& pool);
  std::int64_t bytes() const { return static_cast<std::int64_t>(words_.size()) * 8; }
  ReadMode mode() const { return mode_; }

 private:
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> sinks_;
  ReadMode mode_ = ReadMode::kPlain;
};

struct MatmulShape {
  std::string name;
  std::int64_t n_out = 0;  // N, weight rows
  std::int64_t k_dim = 0;  // K, weight columns
};

// The Linear shapes of one Qwen3.5-0.8B layer of each kind, and the tied lm_head.
std::vector<MatmulShape> qwen35_08b_shapes();

struct MatmulTiming {
  double seconds = 0;           // best time of one call
  double flops_per_s = 0;       // 2 · n_rows · N · K / seconds
  double bytes_per_s = 0;       // weight bytes / seconds (the decode-bound quantity)
  double mean_bytes_per_s = 0;  // weight bytes / the mean time of a call
};

// Times matmul(x [n_rows, K], W [N, K]) on the active ISA, W in bf16 (bits 0) or quantized to
// `bits` in groups of `group_size` (quant.h's packed layout, bf16 scales), or MXFP4 (codes
// kMxfp4: bits and group_size ignored, 4 and 32); runs for about `seconds`. bytes_per_s counts
// the bytes W occupies.
MatmulTiming time_matmul(ThreadPool& pool, const MatmulShape& shape, std::int64_t n_rows,
                         double seconds, int bits = 0, int group_size = 64,
                         QuantCodes codes = QuantCodes::kAffine);

// time_matmul's weights and activations, made once and timed as often as asked: a comparison
// that alternates settings (kernels_bench --decode-orders) times each on the same memory.
class MatmulBench {
 public:
  MatmulBench(const MatmulShape& shape, std::int64_t n_rows, int bits = 0, int group_size = 64,
              QuantCodes codes = QuantCodes::kAffine);
  MatmulTiming run(ThreadPool& pool, double seconds);

 private:
  WeightView w_;
  std::int64_t n_rows_ = 0;
  std::int64_t copies_ = 1;
  std::vector<std::uint16_t> buf_;
  std::uint8_t* base_ = nullptr;
  std::vector<float> x_, y_;
};

// One decode step's attention over a bf16 KV cache: n_seqs sequences x n_layers layers, each a
// single query over n_keys keys (distinct caches, so K/V come from memory as in a long chat).
struct AttentionBenchShape {
  std::string name;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;
  std::int64_t head_dim = 0;
};
// The attention geometry of Qwen3-0.6B (16/8 heads, 128) and Qwen3.5-0.8B (8/2 heads, 256).
std::vector<AttentionBenchShape> decode_attention_shapes();

struct AttentionTiming {
  double seconds = 0;      // best time of one step (all sequences and layers)
  double bytes_per_s = 0;  // K/V bytes read per step / seconds
};
// Times attention_batch over n_seqs jobs per layer, layer after layer, on the active ISA.
// head_major: each cache laid out [n_kv_heads, n_keys, head_dim] instead of token-major.
AttentionTiming time_decode_attention(ThreadPool& pool, const AttentionBenchShape& shape,
                                      std::int64_t n_keys, std::int64_t n_seqs,
                                      std::int64_t n_layers, bool head_major, double seconds);

}  // namespace recur::kernels
