// The sparse MLP: router, grouping of rows by expert, each expert's SwiGLU over its rows, and the
// weighted sum back into each row.
#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "kernels/matmul_grouped.h"
#include "model/blocks.h"
#include "util/check.h"
#include "util/stage_times.h"

namespace recur::model {

namespace k = recur::kernels;

Status check_expert_counts(const ConfigJson& c, std::int64_t n_experts, std::int64_t top_k,
                           std::string_view experts_key) {
  constexpr std::int64_t kMaxExperts = 4096;
  if (n_experts < 1 || n_experts > kMaxExperts || top_k < 1 || top_k > n_experts) {
    return Error(StatusCode::kInvalidArgument,
                 "{}: {} {} and num_experts_per_tok {}: need 1 <= {} <= {} and "
                 "1 <= num_experts_per_tok <= {}",
                 c.file(), experts_key, n_experts, top_k, experts_key, kMaxExperts, experts_key);
  }
  return Status::ok();
}

void visit_moe(TensorVisitor& v, const std::string& p, std::int64_t d_model, MoeW* w) {
  const auto n = static_cast<std::size_t>(w->n_experts);
  w->gate.resize(n);
  w->up.resize(n);
  w->down.resize(n);
  const MoeNames& nm = w->names;
  const std::string m = p + nm.module;
  v.matrix(m + nm.router, w->n_experts, d_model, &w->router);
  if (!nm.selection_bias.empty())
    v.vector(m + nm.selection_bias, {w->n_experts}, &w->selection_bias);
  if (!nm.router_bias.empty()) v.vector(m + nm.router_bias, {w->n_experts}, &w->router_bias);
  if (nm.interleaved) {
    v.interleaved_experts(m + "experts.", w->d_ff, d_model, &w->gate, &w->up, &w->down);
    std::vector<float> gate_up;
    v.vector(m + "experts.gate_up_proj_bias", {w->n_experts, 2 * w->d_ff}, &gate_up);
    v.vector(m + "experts.down_proj_bias", {w->n_experts, d_model}, &w->down_bias);
    if (!gate_up.empty()) {  // a listing visitor binds nothing
      w->gate_bias.resize(gate_up.size() / 2);
      w->up_bias.resize(gate_up.size() / 2);
      for (std::size_t i = 0; i < w->gate_bias.size(); ++i) {
        w->gate_bias[i] = gate_up[2 * i];
        w->up_bias[i] = gate_up[2 * i + 1];
      }
    }
    return;
  }
  const bool gated = w->act == ExpertAct::kSwiglu;
  const ExpertLayout layout{.per_expert_proj = {nm.proj[0], nm.proj[1], nm.proj[2]},
                            .fused_gate_up = nm.fused_gate_up,
                            .fused_down = nm.fused_down,
                            .per_expert = nm.per_expert,
                            .gated = gated,
                            .mlx_proj = {nm.mlx_proj[0], nm.mlx_proj[1], nm.mlx_proj[2]}};
  if (gated) v.expert_matrices(m, ExpertProj::kGate, w->d_ff, d_model, layout, &w->gate);
  v.expert_matrices(m, ExpertProj::kUp, w->d_ff, d_model, layout, &w->up);
  v.expert_matrices(m, ExpertProj::kDown, d_model, w->d_ff, layout, &w->down);
}

// Router logits, then for each of a row's top_k experts its gate, up and down outputs (the experts
// read their rows from x by index, MatmulGroup::rows): every expert's rows are in scratch at
// once, so that one parallel run covers all the experts of a stage.
std::int64_t moe_scratch_per_row(const MoeW& w) {
  return w.n_experts + w.top_k * (w.router.cols + 2 * w.d_ff);
}

namespace {
std::vector<std::int32_t>* g_route_log = nullptr;
}  // namespace

void set_route_log(std::vector<std::int32_t>* log) { g_route_log = log; }

void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 bool normalize, std::int32_t* experts, float* weights) {
  route_top_k(logits, n_rows, n_experts, top_k, RouterRule{.normalize = normalize}, experts,
              weights);
}

namespace {

// DeepSeek-V3's group-limited choice (RouterRule::n_groups) for one row of scores p: which of the
// n_groups groups of consecutive experts may be chosen (kept[g] != 0). A group's score is the sum
// of its two largest keys (score + bias), as transformers' topk(2).sum(); the topk_groups best
// groups are kept, of equal sums the lower index first (a NaN sum is never better, so exactly
// topk_groups groups are kept).
void keep_groups(const float* p, const float* bias, std::int64_t n_experts, const RouterRule& rule,
                 std::vector<float>* sums, std::vector<std::uint8_t>* kept) {
  const std::int64_t n_groups = rule.n_groups, per_group = n_experts / n_groups;
  sums->resize(static_cast<std::size_t>(n_groups));
  kept->assign(static_cast<std::size_t>(n_groups), 0);
  for (std::int64_t g = 0; g < n_groups; ++g) {
    float a = -std::numeric_limits<float>::infinity(), b = a;  // the two largest, a >= b
    for (std::int64_t e = g * per_group; e < (g + 1) * per_group; ++e) {
      const float v = bias != nullptr ? p[e] + bias[e] : p[e];
      if (v > a) {
        b = a;
        a = v;
      } else if (v > b) {
        b = v;
      }
    }
    (*sums)[static_cast<std::size_t>(g)] = a + b;
  }
  for (std::int64_t j = 0; j < rule.topk_groups; ++j) {
    std::int64_t best = -1;
    for (std::int64_t g = 0; g < n_groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      if ((*kept)[gi] == 0 && (best < 0 || (*sums)[gi] > (*sums)[static_cast<std::size_t>(best)])) {
        best = g;
      }
    }
    (*kept)[static_cast<std::size_t>(best)] = 1;
  }
}

// route_top_k without the log: rows are independent, so moe_block runs blocks of them on the pool.
void route_rows(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                const RouterRule& rule, std::int32_t* experts, float* weights) {
  const float* bias = rule.selection_bias;
  thread_local std::vector<float> keys;  // the kept experts' keys, descending
  keys.resize(static_cast<std::size_t>(top_k));
  const bool grouped = rule.n_groups > 1;
  const std::int64_t per_group = n_experts / rule.n_groups;
  thread_local std::vector<float> group_sums;
  thread_local std::vector<std::uint8_t> group_kept;
  for (std::int64_t r = 0; r < n_rows; ++r) {
    float* p = logits + r * n_experts;
    if (rule.score == RouterRule::Score::kSoftmax) {
      k::softmax(p, n_experts);
    } else if (rule.score == RouterRule::Score::kSigmoid) {
      for (std::int64_t e = 0; e < n_experts; ++e) p[e] = 1.0f / (1.0f + std::exp(-p[e]));
    }
    if (grouped) keep_groups(p, bias, n_experts, rule, &group_sums, &group_kept);
    std::int32_t* sel = experts + r * top_k;
    float* wt = weights + r * top_k;
    // One pass in ascending index, keeping the top_k largest keys sorted: a new key goes after
    // every kept key >= it, so of equal keys the lower index ranks first (torch.topk on CPU). The
    // first top_k experts are always taken, so a row of NaNs still gets top_k distinct experts.
    // With groups, the experts of the groups left out are passed over (transformers masks their
    // keys with -inf; top_k <= topk_groups · per_group, so the kept groups have enough).
    std::int64_t kept = 0;
    for (std::int64_t e = 0; e < n_experts; ++e) {
      if (grouped && group_kept[static_cast<std::size_t>(e / per_group)] == 0) continue;
      const float v = bias != nullptr ? p[e] + bias[e] : p[e];
      if (kept == top_k && !(v > keys[static_cast<std::size_t>(top_k - 1)])) continue;
      std::int64_t at = std::min(kept, top_k - 1);
      while (at > 0 && !(keys[static_cast<std::size_t>(at - 1)] >= v)) {
        keys[static_cast<std::size_t>(at)] = keys[static_cast<std::size_t>(at - 1)];
        sel[at] = sel[at - 1];
        --at;
      }
      keys[static_cast<std::size_t>(at)] = v;
      sel[at] = static_cast<std::int32_t>(e);
      kept = std::min(kept + 1, top_k);
    }
    for (std::int64_t j = 0; j < top_k; ++j) wt[j] = p[sel[j]];
    if (rule.score == RouterRule::Score::kSoftmaxOfTopK) k::softmax(wt, top_k);
    if (rule.normalize) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < top_k; ++j) sum += wt[j];
      sum += rule.norm_eps;
      for (std::int64_t j = 0; j < top_k; ++j) wt[j] /= sum;
    }
    if (rule.scale != 1.0f) {
      for (std::int64_t j = 0; j < top_k; ++j) wt[j] *= rule.scale;
    }
  }
}

}  // namespace

void route_top_k(float* logits, std::int64_t n_rows, std::int64_t n_experts, std::int64_t top_k,
                 const RouterRule& rule, std::int32_t* experts, float* weights) {
  RECUR_CHECK(top_k >= 1 && top_k <= n_experts);
  RECUR_CHECK(rule.n_groups >= 1 && n_experts % rule.n_groups == 0 && rule.topk_groups >= 1 &&
              rule.topk_groups <= rule.n_groups &&
              top_k <= rule.topk_groups * (n_experts / rule.n_groups));
  route_rows(logits, n_rows, n_experts, top_k, rule, experts, weights);
  if (g_route_log != nullptr)
    g_route_log->insert(g_route_log->end(), experts, experts + n_rows * top_k);
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

namespace {

// gpt-oss's activation of one slot's gate and up rows, with the expert's biases if any
// (MoeW::clamped): the result into g. The sigmoid runs on the kernels over a row-sized buffer.
void clamped_swiglu(const MoeW& w, float* g, const float* u, const float* gate_bias,
                    const float* up_bias) {
  const std::int64_t f = w.d_ff;
  const float alpha = w.clamped.alpha, limit = w.clamped.limit;
  thread_local std::vector<float> s;
  s.resize(static_cast<std::size_t>(f));
  for (std::int64_t c = 0; c < f; ++c) {
    g[c] = std::min(gate_bias != nullptr ? g[c] + gate_bias[c] : g[c], limit);
    s[static_cast<std::size_t>(c)] = alpha * g[c];
  }
  k::sigmoid(s.data(), f);
  for (std::int64_t c = 0; c < f; ++c) {
    const float up = std::clamp(up_bias != nullptr ? u[c] + up_bias[c] : u[c], -limit, limit);
    g[c] = (up + 1.0f) * (g[c] * s[static_cast<std::size_t>(c)]);
  }
}

}  // namespace

// Rows are grouped by expert (ascending index, rows ascending within one), then three stages each
// run every selected expert at once: gate and up (one matmul_grouped over the tokens' rows of x,
// picked by index; up alone for ReLU² experts), SwiGLU (or ReLU²) over all the slots, down (one
// matmul_grouped). A pool dispatch per expert and matrix, as before, cost more than the products
// of a decode step. Each row then sums its experts' outputs in ascending expert index, the order
// of the reference's index_add_ loop.
void moe_block(ForwardCtx& ctx, const MoeW& w, const float* x, float* out) {
  const stages::Scope stage("moe");
  std::optional<stages::Scope> sub(std::in_place, "router");
  ScratchFrame frame(ctx.scratch);
  const std::int64_t n = ctx.n_rows, d = w.router.cols, f = w.d_ff, n_exp = w.n_experts;
  const std::int64_t top_k = w.top_k, slots = n * top_k;
  float* logits = ctx.scratch->take(n * n_exp);
  float* dn = ctx.scratch->take(slots * d);  // the down outputs
  float* g = ctx.scratch->take(slots * f);
  float* u = ctx.scratch->take(slots * f);
  k::matmul(*ctx.pool, x, n, w.router, logits);
  add_bias(logits, w.router_bias, n);
  // Grown once to the largest batch, like the attention jobs: no allocation per step after that.
  thread_local std::vector<std::int32_t> sel, first, at, token;
  thread_local std::vector<float> wts;
  sel.resize(static_cast<std::size_t>(slots));
  wts.resize(sel.size());
  const RouterRule rule{
      .score = w.score,
      .normalize = w.norm_topk_prob,
      .norm_eps = w.norm_eps,
      .scale = w.routed_scale,
      .selection_bias = w.selection_bias.empty() ? nullptr : w.selection_bias.data(),
      .n_groups = w.n_groups,
      .topk_groups = w.topk_groups};
  sub.emplace("route");
  RECUR_CHECK(top_k >= 1 && top_k <= n_exp);
  RECUR_CHECK(w.n_groups >= 1 && n_exp % w.n_groups == 0 && w.topk_groups >= 1 &&
              w.topk_groups <= w.n_groups && top_k <= w.topk_groups * (n_exp / w.n_groups));
  {
    std::int32_t* const sel_out = sel.data();
    float* const wts_out = wts.data();
    ctx.pool->run_blocks(n, 16, [&](std::int64_t r0, std::int64_t r1) {
      route_rows(logits + r0 * n_exp, r1 - r0, n_exp, top_k, rule, sel_out + r0 * top_k,
                 wts_out + r0 * top_k);
    });
    if (g_route_log != nullptr) g_route_log->insert(g_route_log->end(), sel.begin(), sel.end());
  }
  // Counting sort of the (row, rank) slots by expert, rows ascending within an expert; at[slot]
  // is the slot's place in that order (its row of g, u, dn); token[place] is the slot's row of x.
  first.assign(static_cast<std::size_t>(n_exp + 1), 0);
  for (std::int32_t e : sel) ++first[static_cast<std::size_t>(e) + 1];
  for (std::int64_t e = 0; e < n_exp; ++e) {
    first[static_cast<std::size_t>(e + 1)] += first[static_cast<std::size_t>(e)];
  }
  at.resize(sel.size());
  token.resize(sel.size());
  {
    thread_local std::vector<std::int32_t> fill;
    fill.assign(first.begin(), first.end() - 1);
    for (std::int64_t i = 0; i < slots; ++i) {
      const auto e = static_cast<std::size_t>(sel[static_cast<std::size_t>(i)]);
      at[static_cast<std::size_t>(i)] = fill[e];
      token[static_cast<std::size_t>(fill[e]++)] = static_cast<std::int32_t>(i / top_k);
    }
  }
  // The tasks below run on pool threads, whose own thread_local vectors are empty: they read the
  // calling thread's through these.
  const std::int32_t* const sel_of = sel.data();
  const std::int32_t* const at_of = at.data();
  const float* const weight_of = wts.data();
  // The SwiGLU and the weighted sums are as many bytes as a small matmul's weights: on the pool.
  constexpr std::int64_t kRowsPerTask = 16;
  const auto for_rows = [&](std::int64_t count, const auto& fn) {
    ctx.pool->run_blocks(count, kRowsPerTask, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) fn(r);
    });
  };
  thread_local std::vector<k::MatmulOut> outs;
  thread_local std::vector<k::MatmulGroup> groups;
  thread_local std::vector<std::int32_t> group_expert;
  outs.clear();
  groups.clear();
  group_expert.clear();
  outs.reserve(static_cast<std::size_t>(2 * n_exp));  // groups hold spans into it
  ExpertTraffic& traffic = expert_traffic();
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
    // Un-gated (ReLU²) experts: up alone, into g.
    const bool gated = w.act == ExpertAct::kSwiglu;
    if (gated) outs.push_back({w.gate[ex], g + b * f});
    outs.push_back({w.up[ex], (gated ? u : g) + b * f});
    groups.push_back({.x = x,
                      .n_rows = m,
                      .outs = std::span(outs).last(gated ? 2 : 1),
                      .rows = token.data() + b});
    group_expert.push_back(static_cast<std::int32_t>(e));
  }
  sub.emplace("gate_up");
  k::matmul_grouped(*ctx.pool, groups);
  sub.emplace("swiglu");
  // The expert of each place in the grouped order (for the experts' biases).
  thread_local std::vector<std::int32_t> expert_at;
  if (!w.gate_bias.empty() || !w.down_bias.empty()) {
    expert_at.resize(sel.size());
    for (std::int64_t e = 0; e < n_exp; ++e) {
      for (std::int32_t i = first[static_cast<std::size_t>(e)];
           i < first[static_cast<std::size_t>(e + 1)]; ++i) {
        expert_at[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(e);
      }
    }
  }
  const std::int32_t* const expert_of = expert_at.data();
  if (w.act == ExpertAct::kRelu2) {
    for_rows(slots, [&](std::int64_t i) {
      float* a = g + i * f;
      for (std::int64_t c = 0; c < f; ++c) {
        const float r = std::max(a[c], 0.0f);
        a[c] = r * r;
      }
    });
  } else if (w.clamped.alpha != 0.0f) {
    for_rows(slots, [&](std::int64_t i) {
      const std::int64_t e = expert_of[i];
      const bool biased = !w.gate_bias.empty();
      clamped_swiglu(w, g + i * f, u + i * f, biased ? w.gate_bias.data() + e * f : nullptr,
                     biased ? w.up_bias.data() + e * f : nullptr);
    });
  } else {
    for_rows(slots, [&](std::int64_t i) { k::swiglu(g + i * f, u + i * f, g + i * f, f); });
  }
  // Down, from the SwiGLU rows into dn.
  outs.clear();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto e = static_cast<std::size_t>(group_expert[i]);
    const std::int64_t b = first[e];
    outs.push_back({w.down[e], dn + b * d});
    groups[i] = {.x = g + b * f, .n_rows = groups[i].n_rows, .outs = std::span(outs).last(1)};
  }
  sub.emplace("down");
  k::matmul_grouped(*ctx.pool, groups);
  if (!w.down_bias.empty()) {
    for_rows(slots, [&](std::int64_t i) {
      const float* b = w.down_bias.data() + expert_of[i] * d;
      float* y = dn + i * d;
      for (std::int64_t c = 0; c < d; ++c) y[c] += b[c];
    });
  }
  sub.emplace("combine");
  for_rows(n, [&](std::int64_t r) {
    const std::int32_t* row_sel = sel_of + r * top_k;
    float* o = out + r * d;
    std::fill(o, o + d, 0.0f);
    // The row's experts in ascending index (top_k passes over its top_k distinct experts), each
    // output row requested while the one before it is summed: the rows lie wherever their
    // experts' groups put them, and the stage reads 40 MB at 512 tokens (Qwen3-Next; the stage
    // 1.4-2x faster with the requests, alternating in one session).
    const float* y = nullptr;
    float weight = 0.0f;
    for (std::int32_t prev = -1;;) {
      std::int64_t j = -1;
      for (std::int64_t i = 0; i < top_k; ++i) {
        if (row_sel[i] > prev && (j < 0 || row_sel[i] < row_sel[j])) j = i;
      }
      const float* next = j < 0 ? nullptr : dn + at_of[r * top_k + j] * d;
      if (next != nullptr) {
        for (std::int64_t c = 0; c < d; c += 16) __builtin_prefetch(next + c, 0, 3);
      }
      if (y != nullptr) k::add_scaled(o, y, weight, d);
      if (j < 0) break;
      prev = row_sel[j];
      y = next;
      weight = weight_of[r * top_k + j];
    }
  });
}

}  // namespace recur::model
