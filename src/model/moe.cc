// The sparse MLP: router, grouping of rows by expert, each expert's SwiGLU over its rows, and the
// weighted sum back into each row.
#include "model/moe.h"

#include <algorithm>
#include <cstring>

#include "util/check.h"

namespace recur::model {

namespace k = recur::kernels;

void visit_moe(TensorVisitor& v, const std::string& p, std::int64_t d_model, MoeW* w) {
  const auto n = static_cast<std::size_t>(w->n_experts);
  w->gate.resize(n);
  w->up.resize(n);
  w->down.resize(n);
  v.matrix(p + "mlp.gate.weight", w->n_experts, d_model, &w->router);
  v.expert_matrices(p + "mlp.", "gate_proj", w->d_ff, d_model, &w->gate);
  v.expert_matrices(p + "mlp.", "up_proj", w->d_ff, d_model, &w->up);
  v.expert_matrices(p + "mlp.", "down_proj", d_model, w->d_ff, &w->down);
}

// Router logits, then per expert the gathered rows, its gate and up outputs and its down output.
std::int64_t moe_scratch_per_row(const MoeW& w) {
  return w.n_experts + 2 * w.router.cols + 2 * w.d_ff;
}

void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 bool normalize, std::int32_t* experts, float* weights) {
  RECUR_CHECK(top_k >= 1 && top_k <= n_experts);
  for (std::int64_t r = 0; r < n_rows; ++r) {
    float* p = logits + r * n_experts;
    k::softmax(p, n_experts);
    std::int32_t* sel = experts + r * top_k;
    float* wt = weights + r * top_k;
    // Rank by rank: the largest probability not yet taken, the first index on a tie (strict >).
    // k passes over n_experts values: 8 x 128 compares, nothing beside the matmuls.
    for (std::int64_t j = 0; j < top_k; ++j) {
      std::int32_t best = -1;
      for (std::int64_t e = 0; e < n_experts; ++e) {
        if (std::find(sel, sel + j, static_cast<std::int32_t>(e)) != sel + j) continue;
        if (best < 0 || p[e] > p[best]) best = static_cast<std::int32_t>(e);
      }
      sel[j] = best;
      wt[j] = p[best];
    }
    if (normalize) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < top_k; ++j) sum += wt[j];
      for (std::int64_t j = 0; j < top_k; ++j) wt[j] /= sum;
    }
  }
}

ExpertTraffic& expert_traffic() {
  static ExpertTraffic t;
  return t;
}

namespace {
std::int64_t expert_bytes(const MoeW& w, std::size_t e) {
  return w.gate[e].total_bytes() + w.up[e].total_bytes() + w.down[e].total_bytes();
}
double expert_elements(const MoeW& w, std::size_t e) {
  double n = 0;
  for (const k::WeightView* v : {&w.gate[e], &w.up[e], &w.down[e]}) {
    n += static_cast<double>(v->rows) * static_cast<double>(v->cols);
  }
  return n;
}
}  // namespace

void moe_block(ForwardCtx& ctx, const MoeW& w, const float* x, float* out) {
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d = w.router.cols, f = w.d_ff, n_exp = w.n_experts;
  const std::int64_t top_k = w.top_k;
  float* logits = ctx.scratch->take(n * n_exp);
  float* xg = ctx.scratch->take(n * d);  // the rows routed to one expert, gathered
  float* g = ctx.scratch->take(n * f);
  float* u = ctx.scratch->take(n * f);
  float* yg = ctx.scratch->take(n * d);
  k::matmul(*ctx.pool, x, n, w.router, logits);
  // Grown once to the largest batch, like the attention jobs: no allocation per step after that.
  thread_local std::vector<std::int32_t> sel, first, rows;
  thread_local std::vector<float> wts;
  sel.resize(static_cast<std::size_t>(n * top_k));
  wts.resize(sel.size());
  route_top_k(logits, n, n_exp, top_k, w.norm_topk_prob, sel.data(), wts.data());
  // Counting sort of the (row, rank) pairs by expert, rows ascending within an expert.
  first.assign(static_cast<std::size_t>(n_exp + 1), 0);
  for (std::int32_t e : sel) ++first[static_cast<std::size_t>(e) + 1];
  for (std::int64_t e = 0; e < n_exp; ++e) {
    first[static_cast<std::size_t>(e + 1)] += first[static_cast<std::size_t>(e)];
  }
  rows.resize(sel.size());
  {
    thread_local std::vector<std::int32_t> fill;
    fill.assign(first.begin(), first.end() - 1);
    for (std::int64_t i = 0; i < n * top_k; ++i) {
      const auto e = static_cast<std::size_t>(sel[static_cast<std::size_t>(i)]);
      rows[static_cast<std::size_t>(fill[e]++)] =
          static_cast<std::int32_t>(i);  // row * top_k + rank
    }
  }
  std::fill(out, out + n * d, 0.0f);
  ExpertTraffic& traffic = expert_traffic();
  // Experts in ascending index, so each row adds its experts' outputs in that order whatever
  // else is in the batch (the order of the reference's index_add_ loop).
  for (std::int64_t e = 0; e < n_exp; ++e) {
    const std::int32_t b = first[static_cast<std::size_t>(e)];
    const std::int64_t m = first[static_cast<std::size_t>(e + 1)] - b;
    if (m == 0) continue;
    const auto ex = static_cast<std::size_t>(e);
    if (traffic.enabled) {
      ++traffic.expert_reads;
      traffic.expert_bytes += expert_bytes(w, ex);
      traffic.flops += 2.0 * static_cast<double>(m) * expert_elements(w, ex);
    }
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t row = rows[static_cast<std::size_t>(b + i)] / top_k;
      std::memcpy(xg + i * d, x + row * d, static_cast<std::size_t>(d) * sizeof(float));
    }
    const k::MatmulOut gate_up[] = {{w.gate[ex], g}, {w.up[ex], u}};
    k::matmul_fused(*ctx.pool, xg, m, gate_up);
    k::swiglu(g, u, g, m * f);
    k::matmul(*ctx.pool, g, m, w.down[ex], yg);
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int32_t slot = rows[static_cast<std::size_t>(b + i)];
      const float weight = wts[static_cast<std::size_t>(slot)];
      float* o = out + (slot / top_k) * d;
      const float* y = yg + i * d;
      for (std::int64_t c = 0; c < d; ++c) o[c] += weight * y[c];
    }
  }
}

}  // namespace recur::model
