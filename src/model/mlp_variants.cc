// The fused-GLU and ReLU² MLPs over the kernels' matmul; the elementwise steps are plain loops
// over fixed pool blocks (each element depends on itself alone).
#include "model/mlp_variants.h"

#include <algorithm>

namespace recur::model {

namespace k = recur::kernels;

void visit_fused_glu(TensorVisitor& v, const std::string& gate_up, const std::string& down,
                     std::int64_t d_model, FusedGluW* w) {
  v.matrix(gate_up, 2 * w->d_ff, d_model, &w->gate_up);
  v.matrix(down, d_model, w->d_ff, &w->down);
}

std::int64_t fused_glu_scratch_per_row(const FusedGluW& w) { return 3 * w.d_ff; }

void fused_swiglu_mlp(ForwardCtx& ctx, const FusedGluW& w, const float* x, float* out) {
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, f = w.d_ff;
  float* gu = ctx.scratch->take(n * 2 * f);  // [n, gate (f) | up (f)]
  float* a = ctx.scratch->take(n * f);       // [n, f]
  k::matmul(*ctx.pool, x, n, w.gate_up, gu);
  for (std::int64_t r = 0; r < n; ++r) k::swiglu(gu + r * 2 * f, gu + r * 2 * f + f, a + r * f, f);
  k::matmul(*ctx.pool, a, n, w.down, out);
}

void visit_relu2_mlp(TensorVisitor& v, const std::string& p, std::int64_t d_model,
                     std::int64_t d_ff, Relu2MlpW* w) {
  v.matrix(p + "up_proj.weight", d_ff, d_model, &w->up);
  v.matrix(p + "down_proj.weight", d_model, d_ff, &w->down);
}

std::int64_t relu2_mlp_scratch_per_row(const Relu2MlpW& w) { return w.up.rows; }

void relu2_mlp(ForwardCtx& ctx, const Relu2MlpW& w, const float* x, float* out) {
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, f = w.up.rows;
  float* u = ctx.scratch->take(n * f);  // [n, d_ff]
  k::matmul(*ctx.pool, x, n, w.up, u);
  constexpr std::int64_t kBlock = 16384;
  const std::int64_t total = n * f;
  ctx.pool->run(static_cast<std::size_t>((total + kBlock - 1) / kBlock), [&](std::size_t b) {
    const std::int64_t end = std::min(total, (static_cast<std::int64_t>(b) + 1) * kBlock);
    for (std::int64_t i = static_cast<std::int64_t>(b) * kBlock; i < end; ++i) {
      const float r = std::max(u[i], 0.0f);
      u[i] = r * r;
    }
  });
  k::matmul(*ctx.pool, u, n, w.down, out);
}

void add_scaled(float* h, const float* y, float scale, std::int64_t n) {
  if (scale == 1.0f) return k::add(h, y, n);
  k::add_scaled(h, y, scale, n);
}

}  // namespace recur::model
