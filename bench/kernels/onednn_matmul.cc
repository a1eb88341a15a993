// oneDNN 2.x matmul: src bf16 [M, K], weights bf16 [K, N] in "ba" (our [N, K] rows), dst f32.
#include "onednn_matmul.h"

#include <algorithm>
#include <chrono>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/dtype.h"

namespace recur::bench {

OnednnTiming time_onednn_matmul_bf16(const kernels::MatmulShape& shape, std::int64_t n_rows,
                                     double seconds) {
  using dnnl::memory;
  using Clock = std::chrono::steady_clock;
  const std::int64_t w_elems = shape.n_out * shape.k_dim;
  const std::int64_t copies = std::max<std::int64_t>(1, (std::int64_t{128} << 20) / (w_elems * 2));
  // Distinct contents per copy, as for recur's matmul (identical pages may be merged by the host).
  std::vector<std::uint16_t> w(static_cast<std::size_t>(w_elems * copies));
  for (std::int64_t c = 0; c < copies; ++c)
    for (std::int64_t i = 0; i < w_elems; ++i)
      w[static_cast<std::size_t>(c * w_elems + i)] =
          kernels::f32_to_bf16(static_cast<float>((i + 7 * c) % 89) / 89.0f - 0.5f);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(n_rows * shape.k_dim), 0x3f00);
  std::vector<float> y(static_cast<std::size_t>(n_rows * shape.n_out));

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const memory::desc src_md({n_rows, shape.k_dim}, memory::data_type::bf16, memory::format_tag::ab);
  const memory::desc wei_md({shape.k_dim, shape.n_out}, memory::data_type::bf16,
                            memory::format_tag::ba);
  const memory::desc dst_md({n_rows, shape.n_out}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::desc desc(src_md, wei_md, dst_md);
  const dnnl::matmul::primitive_desc pd(desc, eng);
  dnnl::matmul prim(pd);
  memory src(src_md, eng, x.data());
  memory dst(dst_md, eng, y.data());
  std::vector<memory> weights;
  for (std::int64_t c = 0; c < copies; ++c)
    weights.emplace_back(wei_md, eng, w.data() + c * w_elems);
  auto run = [&](std::int64_t c) {
    prim.execute(strm, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_WEIGHTS, weights[static_cast<std::size_t>(c)]},
                        {DNNL_ARG_DST, dst}});
    strm.wait();
  };
  run(0);
  double best = 1e30;
  std::int64_t calls = 0;
  const auto t0 = Clock::now();
  do {
    const auto t1 = Clock::now();
    run(calls % copies);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t1).count());
    ++calls;
  } while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds || calls < 3);
  OnednnTiming out;
  out.timing.seconds = best;
  out.timing.flops_per_s = 2.0 * static_cast<double>(n_rows * w_elems) / best;
  out.timing.bytes_per_s = 2.0 * static_cast<double>(w_elems) / best;
  out.impl = pd.impl_info_str();
  return out;
}

}  // namespace recur::bench
