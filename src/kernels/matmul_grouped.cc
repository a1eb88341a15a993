// Shape checks of matmul_grouped; the run itself is the dispatcher's (dispatch.cc), which runs a
// plain matmul as a group of one.
#include "kernels/matmul_grouped.h"

#include "kernels/matmul_isa.h"
#include "util/check.h"

namespace recur::kernels {

void matmul_grouped(ThreadPool& pool, std::span<const MatmulGroup> groups) {
  for (const MatmulGroup& g : groups) {
    RECUR_CHECK(g.n_rows >= 0 && !g.outs.empty() && g.outs.size() <= kMaxFusedMatmuls);
    for (const MatmulOut& o : g.outs) {
      RECUR_CHECK(o.w.rows >= 0 && o.w.cols == g.outs[0].w.cols && o.w.cols >= 0);
    }
  }
  detail::matmul_dispatch(pool, groups);
}

}  // namespace recur::kernels
