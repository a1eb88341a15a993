// ISA detection (cpuid + xgetbv, and the Linux permission request AMX tile state needs) and the
// process-wide choice the kernels dispatch on: a pointer to the chosen ISA's KernelTable.
#include "kernels/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/matmul_isa.h"

namespace recur::kernels {
namespace {

struct CpuFeatures {
  bool avx2 = false;
  bool avx2_vnni = false;
  bool avx512 = false;
  bool amx = false;
};

std::uint64_t xgetbv0() {
  std::uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<std::uint64_t>(edx) << 32) | eax;
}

// Linux keeps AMX tile data (XFEATURE 18) off until a process asks (ARCH_REQ_XCOMP_PERM).
bool request_amx_permission() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool fma = (c >> 12) & 1;
  const bool f16c = (c >> 29) & 1;
  if (!osxsave) return f;
  const std::uint64_t xcr0 = xgetbv0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;
  const bool tile_os = (xcr0 & 0x60000) == 0x60000;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1;
  const bool avx512f = (b >> 16) & 1;
  const bool avx512bw = (b >> 30) & 1;
  const bool avx512vl = (b >> 31) & 1;
  const bool avx512vnni = (c >> 11) & 1;
  const bool amx_bf16 = (d >> 22) & 1;
  const bool amx_tile = (d >> 24) & 1;
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  const bool avx512bf16 = (a1 >> 5) & 1;
  const bool avx_vnni = (a1 >> 4) & 1;
  f.avx2 = ymm_os && avx2 && fma && f16c;
  f.avx2_vnni = f.avx2 && avx_vnni;
  // Every CPU with AVX-512 BF16 (Cooper Lake, Sapphire Rapids, Zen 4) has VNNI, which the
  // quantized matmul needs: requiring both costs no CPU.
  f.avx512 = f.avx2 && zmm_os && avx512f && avx512bw && avx512vl && avx512bf16 && avx512vnni;
  f.amx = f.avx512 && tile_os && amx_tile && amx_bf16 && request_amx_permission();
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

// Null until the first select_isa or active_kernels.
std::atomic<const detail::KernelTable*> g_active{nullptr};

const detail::KernelTable& table_of(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return detail::kAvx2Kernels;
    case Isa::kAvx2Vnni:
      return detail::kAvx2VnniKernels;
    case Isa::kAvx512:
      return detail::kAvx512Kernels;
    case Isa::kAmx:
      return detail::kAmxKernels;
    case Isa::kScalar:
    case Isa::kAuto:
      break;
  }
  return detail::kScalarKernels;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx2Vnni:
      return "avx2-vnni";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAmx:
      return "amx";
    case Isa::kAuto:
      return "auto";
  }
  return "?";
}

Result<Isa> parse_isa(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx, Isa::kAuto}) {
    if (name == isa_name(isa)) return isa;
  }
  return Error(StatusCode::kInvalidArgument,
               "unknown ISA '{}': expected auto, amx, avx512, avx2-vnni, avx2 or scalar", name);
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
    case Isa::kAuto:
      return true;
    case Isa::kAvx2:
      return features().avx2;
    case Isa::kAvx2Vnni:
      return features().avx2_vnni;
    case Isa::kAvx512:
      return features().avx512;
    case Isa::kAmx:
      return features().amx;
  }
  return false;
}

Isa best_isa() {
  for (Isa isa : {Isa::kAmx, Isa::kAvx512, Isa::kAvx2Vnni, Isa::kAvx2}) {
    if (isa_supported(isa)) return isa;
  }
  return Isa::kScalar;
}

Result<Isa> select_isa(Isa requested) {
  const Isa isa = requested == Isa::kAuto ? best_isa() : requested;
  if (!isa_supported(isa)) {
    static constexpr const char* kNeeds[] = {
        "", "AVX2, FMA and F16C", "AVX2, FMA, F16C and AVX-VNNI",
        "AVX-512 F/BW/VL/BF16 with OS zmm support",
        "AMX-TILE and AMX-BF16 with OS tile support (Linux >= 5.16)"};
    return Error(StatusCode::kFailedPrecondition,
                 "ISA '{}' was requested but this CPU lacks {} (best available: {})", isa_name(isa),
                 kNeeds[static_cast<int>(isa)], isa_name(best_isa()));
  }
  g_active.store(&table_of(isa), std::memory_order_relaxed);
  return isa;
}

Isa active_isa() { return detail::active_kernels().isa; }

namespace detail {

const KernelTable& active_kernels() {
  const KernelTable* table = g_active.load(std::memory_order_relaxed);
  if (table == nullptr) {
    table = &table_of(best_isa());
    g_active.store(table, std::memory_order_relaxed);
  }
  return *table;
}
namespace {
// -1: the vendor's choice; else decode_order_from_bits's bits.
std::atomic<int> g_decode_order_override{-1};
}  // namespace

void override_decode_order(const DecodeOrder* order) {
  g_decode_order_override.store(
      order == nullptr ? -1
                       : (order->one_row_sequential ? 1 : 0) | (order->rows_sequential ? 2 : 0) |
                             (order->l1_prefetch ? 4 : 0) | (order->scattered_l1_prefetch ? 8 : 0));
}

DecodeOrder decode_order_from_bits(int bits) {
  return {.one_row_sequential = (bits & 1) != 0,
          .rows_sequential = (bits & 2) != 0,
          .l1_prefetch = (bits & 4) != 0,
          .scattered_l1_prefetch = (bits & 8) != 0};
}

DecodeOrder decode_order() {
  if (const int bits = g_decode_order_override.load(std::memory_order_relaxed); bits >= 0) {
    return decode_order_from_bits(bits);
  }
  static const DecodeOrder vendor = [] {
    unsigned a, b, c, d;
    char name[13] = {};
    if (__get_cpuid(0, &a, &b, &c, &d)) {
      std::memcpy(name, &b, 4);
      std::memcpy(name + 4, &d, 4);
      std::memcpy(name + 8, &c, 4);
    }
    const bool amd = std::strcmp(name, "AuthenticAMD") == 0;
    return DecodeOrder{.one_row_sequential = amd,
                       .rows_sequential = !amd,
                       .l1_prefetch = !amd,
                       .scattered_l1_prefetch = amd};
  }();
  return vendor;
}

std::int64_t lanes_weight_l1_bytes() {
  static const std::int64_t bytes = [] {
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return std::int64_t{l1 >= 48 * 1024 ? 32 : 24} * 1024;
  }();
  return bytes;
}

}  // namespace detail
}  // namespace recur::kernels
